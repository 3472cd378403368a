// Tests of the process-wide hot-key cache: keys that leave the hot set lose their replies, and
// every change of tracking link drops every reply and voids fills sent under the previous one.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "stampede/hot_cache.hpp"

using namespace corral;
using namespace corral::stampede;

namespace {
config::HotKeySettings settings() {
  config::HotKeySettings s;
  s.cache = true;
  s.max_bytes = 1 << 20;
  return s;
}

void put(HotCache& hot, std::string_view key) {
  const auto now = cache::TimePoint{} + std::chrono::seconds(1);
  hot.store().store({key, "GET"}, cache::Entry::make("$1\r\nv\r\n", now,
                                                     {std::chrono::hours(1), {}, {}}, {}, false));
}

bool cached(const HotCache& hot, std::string_view key) {
  return hot.store().peek({key, "GET"}, cache::TimePoint{} + std::chrono::seconds(2)).has_value();
}
}  // namespace

TEST_CASE("a key that cools down loses its cached reply", "[hotkeys]") {
  HotCache hot(settings());
  hot.publish(std::make_shared<const HotSet>(std::vector<std::string>{"a", "b"}));
  const auto version = hot.version();
  put(hot, "a");
  put(hot, "b");
  hot.publish(std::make_shared<const HotSet>(std::vector<std::string>{"b"}));
  CHECK(hot.version() != version);
  CHECK_FALSE(cached(hot, "a"));
  CHECK(cached(hot, "b"));
  CHECK(hot.evictions(HotEviction::cooled) == 1);
  CHECK(hot.keys()->contains("b"));
  CHECK_FALSE(hot.keys()->contains("a"));
}

TEST_CASE("a change of tracking link drops every hot reply and voids fills in flight",
          "[hotkeys]") {
  HotCache hot(settings());
  CHECK_FALSE(hot.link());
  hot.link_up("7");
  REQUIRE(hot.link());
  CHECK(hot.link()->client_id == "7");
  const auto generation = hot.generation();
  put(hot, "a");
  const auto ticket = hot.store().fill_ticket("b");

  SECTION("lost") {
    hot.link_down();
    CHECK_FALSE(hot.link());
  }
  SECTION("replaced by a new session") {
    hot.link_up("9");
    CHECK(hot.link()->client_id == "9");
  }
  CHECK(hot.generation() != generation);
  CHECK_FALSE(cached(hot, "a"));
  CHECK_FALSE(hot.store().ticket_valid("b", ticket));
  CHECK(hot.evictions(HotEviction::flushed) == 1);
}

TEST_CASE("an invalidation drops the key's reply and voids its fill", "[hotkeys]") {
  HotCache hot(settings());
  put(hot, "a");
  const auto ticket = hot.store().fill_ticket("a");
  hot.invalidate("a");
  CHECK_FALSE(cached(hot, "a"));
  CHECK_FALSE(hot.store().ticket_valid("a", ticket));
  CHECK(hot.evictions(HotEviction::invalidated) == 1);
}
