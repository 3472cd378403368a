// The tunnel barrier's request, and reading its reply (see tunnel_barrier.hpp).
#include "proxy/links/tunnel_barrier.hpp"

#include <array>
#include <random>

#include "resp/encoder.hpp"

namespace corral::proxy {
namespace {

// Random per process, so that no client can make its own PING look like Corral's barrier.
const std::string& barrier_token() {
  static const std::string token = [] {
    std::random_device random;
    std::string out = "corral-barrier-";
    constexpr std::string_view kHex = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) out += kHex[random() % kHex.size()];
    return out;
  }();
  return token;
}

struct BarrierReplies {
  std::string request;
  std::string subscribed;      // *2 pong <token>
  std::string not_subscribed;  // $<n> <token>
};

const BarrierReplies& barrier_replies() {
  static const BarrierReplies replies = [] {
    BarrierReplies out;
    const std::array<std::string_view, 2> argv{"PING", barrier_token()};
    resp::append_command(out.request, argv);
    resp::append_array_header(out.subscribed, 2);
    resp::append_bulk(out.subscribed, "pong");
    resp::append_bulk(out.subscribed, barrier_token());
    resp::append_bulk(out.not_subscribed, barrier_token());
    return out;
  }();
  return replies;
}

}  // namespace

std::string_view barrier_request() { return barrier_replies().request; }

std::string_view barrier_reply(bool subscribed) {
  return subscribed ? barrier_replies().subscribed : barrier_replies().not_subscribed;
}

BarrierReply read_barrier_reply(std::string_view reply) {
  if (reply == barrier_reply(true)) return BarrierReply::subscribed;
  if (reply == barrier_reply(false)) return BarrierReply::not_subscribed;
  if (reply.starts_with("-NOPERM ") && reply.find("'ping'") != std::string_view::npos) {
    return BarrierReply::refused;
  }
  return BarrierReply::not_barrier;
}

void append_subscribed_context_error(std::string& out, std::string_view command) {
  std::string text = "ERR Can't execute '";
  text += command;
  text +=
      "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
      "context";
  resp::append_error(out, text);
}

bool allowed_while_subscribed(std::string_view command) {
  for (std::string_view allowed : {"subscribe", "psubscribe", "ssubscribe", "unsubscribe",
                                   "punsubscribe", "sunsubscribe", "ping", "quit", "reset"}) {
    if (command == allowed) return true;
  }
  return false;
}

}  // namespace corral::proxy
