// Pub/sub bookkeeping: which replies confirm or end subscriptions, and the answers Redis gives a
// client that has none.
#include "proxy/links/subscriptions.hpp"

#include "resp/encoder.hpp"
#include "resp/reply.hpp"

namespace corral::proxy {

bool ends_subscriptions(std::string_view reply) {
  // Most pushes are messages: reject them on their first bytes before decoding anything.
  // A RESP2 array, or a RESP3 push: the same three elements.
  if (!reply.starts_with('*') && !reply.starts_with('>')) return false;
  const auto body = reply.substr(1);
  if (!body.starts_with("3\r\n$11\r\nunsubscribe\r\n") &&
      !body.starts_with("3\r\n$12\r\npunsubscribe\r\n") &&
      !body.starts_with("3\r\n$12\r\nsunsubscribe\r\n")) {
    return false;
  }
  const auto decoded = resp::decode_reply(reply);
  return decoded && decoded->elements.size() == 3 &&
         decoded->elements[2].type == resp::Reply::Type::integer &&
         decoded->elements[2].integer == 0;
}

bool is_unsubscribe(const CommandSpec& row) {
  return (row.flags & kPubSub) && row.name.ends_with("unsubscribe");
}

void append_unsubscribed_replies(std::string& out, std::string_view command,
                                 std::span<const std::string_view> argv) {
  const auto confirm = [&](const std::string_view* channel) {
    resp::append_array_header(out, 3);
    resp::append_bulk(out, command);
    channel ? resp::append_bulk(out, *channel) : resp::append_null(out);
    resp::append_integer(out, 0);
  };
  if (argv.size() == 1) return confirm(nullptr);
  for (std::size_t i = 1; i < argv.size(); ++i) confirm(&argv[i]);
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

void SubscriptionCounts::follow(std::string_view reply) {
  // Most are messages ("message", "pmessage", "smessage"): the first bytes tell.
  if (!reply.starts_with("*3\r\n$") && !reply.starts_with(">3\r\n$")) return;
  const auto kind = reply.substr(4);
  int* counted = nullptr;
  if (kind.starts_with("$9\r\nsubscribe\r\n") || kind.starts_with("$11\r\nunsubscribe\r\n")) {
    counted = &channels;
  } else if (kind.starts_with("$10\r\npsubscribe\r\n") ||
             kind.starts_with("$12\r\npunsubscribe\r\n")) {
    counted = &patterns;
  } else if (kind.starts_with("$10\r\nssubscribe\r\n") ||
             kind.starts_with("$12\r\nsunsubscribe\r\n")) {
    counted = &shard_channels;
  } else {
    return;
  }
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->elements.size() != 3 ||
      decoded->elements[2].type != resp::Reply::Type::integer) {
    return;
  }
  const auto left = decoded->elements[2].integer;
  if (counted == &shard_channels) {
    shard_channels = static_cast<int>(left);
  } else {
    *counted += static_cast<int>(left) - (channels + patterns);
    if (*counted < 0) *counted = 0;
  }
}

bool confirms_subscription(std::string_view reply) {
  return reply.starts_with("*3\r\n$9\r\nsubscribe\r\n") ||
         reply.starts_with("*3\r\n$10\r\npsubscribe\r\n") ||
         reply.starts_with("*3\r\n$10\r\nssubscribe\r\n");
}

}  // namespace corral::proxy
