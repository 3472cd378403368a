// Tests of the hot set's choice from a window's report: reads only, past min_rate once the
// sketch's over-count is taken off, outside every policy, hottest first, at most max_keys.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "stampede/core/hot_set.hpp"

using namespace corral::stampede;

namespace {
HotKey read_key(std::string key, double rate, std::uint64_t sampled, std::uint64_t error = 0) {
  HotKey k;
  k.key = std::move(key);
  k.kind = HotKeyKind::read;
  k.rate = rate;
  k.sampled = sampled;
  k.sketch_error = error;
  return k;
}
}  // namespace

TEST_CASE("the hot set takes the reads past min_rate, hottest first, at most max_keys",
          "[hotkeys]") {
  auto written = read_key("w", 5000, 500);
  written.kind = HotKeyKind::write;
  const std::vector<HotKey> report{read_key("b", 200, 20), written, read_key("a", 900, 90),
                                   read_key("cold", 50, 5), read_key("c", 150, 15)};
  CHECK(choose_hot_keys(report, 100, 10, {}) == std::vector<std::string>{"a", "b", "c"});
  CHECK(choose_hot_keys(report, 100, 2, {}) == std::vector<std::string>{"a", "b"});
  CHECK(choose_hot_keys(report, 1000, 10, {}).empty());
}

TEST_CASE("a key's inherited over-count does not make it hot", "[hotkeys]") {
  // 100 sampled, 90 of which may have been another key's: at most 100 of its 1000/s are sure.
  const auto inherited = read_key("newcomer", 1000, 100, 90);
  CHECK(guaranteed_rate(inherited) == Approx(100));
  CHECK(choose_hot_keys({inherited}, 500, 10, {}).empty());
  CHECK(choose_hot_keys({inherited}, 100, 10, {}) == std::vector<std::string>{"newcomer"});
}

TEST_CASE("keys a policy caches are left to it", "[hotkeys]") {
  const std::vector<HotKey> report{read_key("pol:x", 900, 90), read_key("free", 800, 80)};
  const auto under_policy = [](std::string_view key) { return key.starts_with("pol:"); };
  CHECK(choose_hot_keys(report, 100, 10, under_policy) == std::vector<std::string>{"free"});
  const HotSet set(choose_hot_keys(report, 100, 10, under_policy));
  CHECK(set.contains("free"));
  CHECK_FALSE(set.contains("pol:x"));
  CHECK(set.size() == 1);
}
