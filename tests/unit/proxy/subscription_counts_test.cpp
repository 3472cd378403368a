// CLIENT LIST's sub, psub and ssub, followed from Redis's (un)subscribe confirmations
// (proxy/links/subscriptions.hpp), RESP2 replies and RESP3 pushes alike.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <tuple>

#include "proxy/links/subscriptions.hpp"
#include "resp/encoder.hpp"

namespace corral::proxy {
namespace {

std::string confirmation(char type, std::string_view kind, std::string_view channel, int left) {
  std::string out = std::string(1, type) + "3\r\n";
  resp::append_bulk(out, kind);
  resp::append_bulk(out, channel);
  resp::append_integer(out, left);
  return out;
}

std::tuple<int, int, int> of(const SubscriptionCounts& counts) {
  return {counts.channels, counts.patterns, counts.shard_channels};
}

}  // namespace

TEST_CASE("channels and patterns share Redis's count; the kind confirmed takes the change",
          "[subscriptions]") {
  SubscriptionCounts counts;
  counts.follow(confirmation('*', "subscribe", "a", 1));
  counts.follow(confirmation('*', "subscribe", "b", 2));
  counts.follow(confirmation('*', "psubscribe", "p*", 3));
  CHECK(of(counts) == std::tuple{2, 1, 0});
  counts.follow(confirmation('*', "subscribe", "a", 3));  // held already
  CHECK(of(counts) == std::tuple{2, 1, 0});
  counts.follow(confirmation('*', "ssubscribe", "s", 1));  // shard channels count apart
  CHECK(of(counts) == std::tuple{2, 1, 1});
  counts.follow(confirmation('*', "punsubscribe", "p*", 2));
  CHECK(of(counts) == std::tuple{2, 0, 1});
  counts.follow(confirmation('*', "unsubscribe", "a", 1));
  counts.follow(confirmation('*', "unsubscribe", "b", 0));
  counts.follow(confirmation('*', "sunsubscribe", "s", 0));
  CHECK(of(counts) == std::tuple{0, 0, 0});
}

TEST_CASE("RESP3 pushes count alike; messages and other replies change nothing",
          "[subscriptions]") {
  SubscriptionCounts counts;
  counts.follow(confirmation('>', "psubscribe", "p1", 1));
  counts.follow(confirmation('>', "psubscribe", "p2", 2));
  counts.follow(confirmation('>', "subscribe", "a", 3));
  CHECK(of(counts) == std::tuple{1, 2, 0});
  counts.follow(confirmation('*', "message", "a", 7));
  counts.follow(confirmation('>', "message", "a", 7));
  counts.follow("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n$1\r\nx\r\n");  // no count: not Redis's
  counts.follow("+OK\r\n");
  CHECK(of(counts) == std::tuple{1, 2, 0});
}

}  // namespace corral::proxy
