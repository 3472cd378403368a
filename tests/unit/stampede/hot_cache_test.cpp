// Tests of the process-wide hot-key cache: keys that leave the hot set lose their replies, and
// every change of tracking link drops every reply and voids fills sent under the previous one.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "stampede/hot/hot_cache.hpp"

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
  CHECK_FALSE(hot.link(""));
  hot.link_up("", "7");
  REQUIRE(hot.link(""));
  CHECK(hot.link("")->client_id == "7");
  const auto generation = hot.generation();
  put(hot, "a");
  const auto ticket = hot.store().fill_ticket("b");

  SECTION("lost") {
    hot.link_down("");
    CHECK_FALSE(hot.link(""));
  }
  SECTION("replaced by a new session") {
    hot.link_up("", "9");
    CHECK(hot.link("")->client_id == "9");
  }
  CHECK(hot.generation() != generation);
  CHECK_FALSE(cached(hot, "a"));
  CHECK_FALSE(hot.store().ticket_valid("b", ticket));
  CHECK(hot.evictions(HotEviction::flushed) == 1);
}

TEST_CASE("each cluster node has its own link, and a change of any of them voids every fill",
          "[hotkeys]") {
  HotCache hot(settings());
  hot.link_up("127.0.0.1:7000", "4");
  hot.link_up("127.0.0.1:7001", "12");
  CHECK(hot.link("127.0.0.1:7000")->client_id == "4");
  CHECK(hot.link("127.0.0.1:7001")->client_id == "12");
  CHECK_FALSE(hot.link("127.0.0.1:7002"));
  CHECK_FALSE(hot.link(""));
  // A fill to 7000 records the generation its link was read in.
  const auto fill_generation = hot.link("127.0.0.1:7000")->generation;
  CHECK(fill_generation == hot.generation());
  put(hot, "a");

  hot.link_down("127.0.0.1:7001");
  CHECK_FALSE(hot.link("127.0.0.1:7001"));
  CHECK(hot.link("127.0.0.1:7000")->client_id == "4");
  CHECK(hot.generation() != fill_generation);
  CHECK_FALSE(cached(hot, "a"));
}

TEST_CASE("a moved slot's hot replies go, the others stay", "[hotkeys]") {
  HotCache hot(settings());
  put(hot, "{s1}a");
  put(hot, "{s1}b");
  put(hot, "{s2}c");
  const auto ticket = hot.store().fill_ticket("{s1}d");
  hot.drop_matching([](std::string_view key) { return key.starts_with("{s1}"); });
  CHECK_FALSE(cached(hot, "{s1}a"));
  CHECK_FALSE(cached(hot, "{s1}b"));
  CHECK(cached(hot, "{s2}c"));
  CHECK_FALSE(hot.store().ticket_valid("{s1}d", ticket));
  CHECK(hot.evictions(HotEviction::flushed) == 2);
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
