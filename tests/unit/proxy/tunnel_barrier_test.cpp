// The tunnel barrier's reply, read in each shape Redis gives it (proxy/links/tunnel_barrier.hpp).
#include <catch2/catch.hpp>

#include <string>

#include "proxy/links/tunnel_barrier.hpp"
#include "resp/encoder.hpp"

namespace corral::proxy {
namespace {

// The barrier's token, read back from its request: *2 $4 PING $<n> <token>.
std::string barrier_token() {
  const std::string_view request = barrier_request();
  const auto token_start = request.find("\r\n", request.find("PING") + 6) + 2;
  return std::string(request.substr(token_start, request.size() - token_start - 2));
}

}  // namespace

TEST_CASE("the barrier's reply says whether Redis holds the connection subscribed", "[tunnel]") {
  const std::string token = barrier_token();
  REQUIRE(token.starts_with("corral-barrier-"));
  std::string subscribed;
  resp::append_array_header(subscribed, 2);
  resp::append_bulk(subscribed, "pong");
  resp::append_bulk(subscribed, token);
  CHECK(subscribed == barrier_reply(true));
  CHECK(read_barrier_reply(subscribed) == BarrierReply::subscribed);
  std::string plain;
  resp::append_bulk(plain, token);
  CHECK(plain == barrier_reply(false));
  CHECK(read_barrier_reply(plain) == BarrierReply::not_subscribed);
  CHECK(read_barrier_reply("-NOPERM this user has no permissions to run the 'ping' command\r\n") ==
        BarrierReply::refused);
}

TEST_CASE("a client's own PING is never taken for the barrier", "[tunnel]") {
  CHECK(read_barrier_reply("*2\r\n$4\r\npong\r\n$0\r\n\r\n") == BarrierReply::not_barrier);
  CHECK(read_barrier_reply("$15\r\ncorral-barrier-\r\n") == BarrierReply::not_barrier);
  CHECK(read_barrier_reply("+PONG\r\n") == BarrierReply::not_barrier);
  CHECK(read_barrier_reply("-NOPERM this user has no permissions to run the 'get' command\r\n") ==
        BarrierReply::not_barrier);
}

TEST_CASE("Redis's refusal of a command in subscribed context", "[tunnel]") {
  std::string out;
  append_subscribed_context_error(out, "script|debug");
  CHECK(out ==
        "-ERR Can't execute 'script|debug': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
        "RESET are allowed in this context\r\n");
  CHECK(allowed_while_subscribed("punsubscribe"));
  CHECK_FALSE(allowed_while_subscribed("client|reply"));
}

}  // namespace corral::proxy
