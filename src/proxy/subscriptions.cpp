// Recognises the reply that ends a client's subscribed mode.
#include "proxy/subscriptions.hpp"

#include "resp/reply.hpp"

namespace corral::proxy {

bool ends_subscriptions(std::string_view reply) {
  // Most pushes are messages: reject them on their first bytes before decoding anything.
  if (!reply.starts_with("*3\r\n$11\r\nunsubscribe\r\n") &&
      !reply.starts_with("*3\r\n$12\r\npunsubscribe\r\n") &&
      !reply.starts_with("*3\r\n$12\r\nsunsubscribe\r\n")) {
    return false;
  }
  const auto decoded = resp::decode_reply(reply);
  return decoded && decoded->elements.size() == 3 &&
         decoded->elements[2].type == resp::Reply::Type::integer &&
         decoded->elements[2].integer == 0;
}

bool is_subscription_push(std::string_view push) {
  if (!push.starts_with(">3\r\n$")) return false;
  const auto kind = push.substr(4);
  for (std::string_view confirmation :
       {"$9\r\nsubscribe\r\n", "$10\r\npsubscribe\r\n", "$10\r\nssubscribe\r\n",
        "$11\r\nunsubscribe\r\n", "$12\r\npunsubscribe\r\n", "$12\r\nsunsubscribe\r\n"}) {
    if (kind.starts_with(confirmation)) return true;
  }
  return false;
}

bool confirms_subscription(std::string_view reply) {
  return reply.starts_with("*3\r\n$9\r\nsubscribe\r\n") ||
         reply.starts_with("*3\r\n$10\r\npsubscribe\r\n") ||
         reply.starts_with("*3\r\n$10\r\nssubscribe\r\n");
}

}  // namespace corral::proxy
