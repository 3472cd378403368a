// Tests of what the engine keeps for an HTTP-caching origin: entry meta round trips, tag purges
// by generation, and the windows of an entry from a response over its policy's.
#include <catch2/catch.hpp>

#include "cache/clock.hpp"
#include "stampede/core/entry_meta.hpp"
#include "stampede/core/response_lifetime.hpp"
#include "stampede/core/tag_epochs.hpp"

using namespace corral;
using namespace corral::stampede;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

const cache::Lifetime kPolicy{60s, 10s, 0s};

cache::Entry entry_with(const std::string& meta, const cache::ManualClock& clock,
                        cache::Lifetime lifetime = kPolicy) {
  auto entry = cache::Entry::make("$1\r\nx\r\n", clock.now(), lifetime, 1ms, false);
  entry.meta = meta;
  return entry;
}

}  // namespace

TEST_CASE("entry meta round-trips, and refuses what it did not write", "[entry_meta]") {
  EntryMeta meta;
  meta.tag_generation = 42;
  meta.stale_if_error = 1500ms;
  meta.validators = "\"e1\"\nSat, 05 Nov 1994 10:00:00 GMT";  // contains the line feed
  meta.tags = {"a", "b:c"};
  const auto bytes = meta.encode();
  const auto back = EntryMeta::decode(bytes);
  REQUIRE(back);
  CHECK(back->tag_generation == 42);
  CHECK(back->stale_if_error == 1500ms);
  CHECK(back->validators == meta.validators);
  CHECK(back->tags == meta.tags);
  CHECK(EntryMeta::generation_of(bytes) == 42);
  for (const auto* bad : {"", "x", "1 2", "1 2 10\nshort", "1 2 0\nunterminated-tag"}) {
    INFO(bad);
    CHECK_FALSE(EntryMeta::decode(bad));
  }
}

TEST_CASE("a tag purge reaches entries fetched before it, not after", "[tag_epochs]") {
  TagEpochs tags;
  cache::ManualClock clock;
  EntryMeta meta;
  meta.tags = {"red", "blue"};
  meta.tag_generation = tags.generation();
  const auto before = entry_with(meta.encode(), clock);
  CHECK_FALSE(tags_purged(before, tags));
  tags.purge("green");
  CHECK_FALSE(tags_purged(before, tags));  // another tag
  CHECK(tags.purge("blue") == 2);
  CHECK(tags_purged(before, tags));
  meta.tag_generation = tags.generation();
  CHECK_FALSE(tags_purged(entry_with(meta.encode(), clock), tags));  // fetched after the purge
  const std::vector<std::string> red{"red"};
  CHECK_FALSE(tags.purged_after(red, 0));
  CHECK_FALSE(tags_purged(entry_with("", clock), tags));  // no meta: never tagged
}

TEST_CASE("the response's freshness replaces the ttl; swr and sie only extend", "[lifetime]") {
  origin::ResponseCaching caching;
  caching.fresh_for = 5s;
  caching.grace = 2s;             // below the policy's 10s grace: the policy's stays
  caching.stale_if_error = 300s;  // above the policy's 0s
  const auto out = response_lifetime(kPolicy, caching, false, 0, 600s);
  CHECK(out.lifetime.ttl == 5s);
  CHECK(out.lifetime.grace == 10s);
  CHECK(out.lifetime.stale_if_error == 300s);
  CHECK(out.meta.empty());  // no validators, no tags: nothing to keep
  caching.grace = 30s;
  CHECK(response_lifetime(kPolicy, caching, false, 0, 600s).lifetime.grace == 30s);
  // A negative entry takes the freshness only.
  const auto negative = response_lifetime({30s, 0s, 0s}, caching, true, 0, 600s);
  CHECK(negative.lifetime.ttl == 5s);
  CHECK(negative.lifetime.grace == 0s);
  CHECK(negative.lifetime.stale_if_error == 0s);
}

TEST_CASE("no-cache leaves no grace; no freshness keeps the policy ttl", "[lifetime]") {
  origin::ResponseCaching caching;
  CHECK(response_lifetime(kPolicy, caching, false, 0, 600s).lifetime.ttl == 60s);
  caching.fresh_for = 0ms;
  caching.revalidate_always = true;
  const auto out = response_lifetime(kPolicy, caching, false, 0, 600s);
  CHECK(out.lifetime.ttl == 0s);
  CHECK(out.lifetime.grace == 0s);
}

TEST_CASE(
    "a copy with validators is kept past expiry for revalidation, served on error only "
    "within its real stale_if_error",
    "[lifetime]") {
  cache::ManualClock clock;
  origin::ResponseCaching caching;
  caching.fresh_for = 1s;
  caching.stale_if_error = 5s;
  caching.validators = "\"v\"\n";
  caching.tags = {"t"};
  const auto out = response_lifetime({60s, 0s, 0s}, caching, false, 7, 600s);
  CHECK(out.lifetime.stale_if_error == 600s);  // the store keeps it for max_ttl
  CHECK(response_lifetime({60s, 0s, 0s}, caching, true, 7, 600s).lifetime.stale_if_error ==
        0s);  // but not a "not found"
  const auto meta = EntryMeta::decode(out.meta);
  REQUIRE(meta);
  CHECK(meta->stale_if_error == 5s);
  CHECK(meta->tag_generation == 7);
  CHECK(meta->tags == std::vector<std::string>{"t"});
  const auto entry = entry_with(out.meta, clock, out.lifetime);
  CHECK(serve_on_error_until(entry) == entry.soft_expiry + 5s);
  clock.advance(10s);
  CHECK(entry.state(clock.now()) == cache::EntryState::error_only);  // still there to revalidate
  CHECK(clock.now() >= serve_on_error_until(entry));                 // but not served on error
  CHECK(serve_on_error_until(entry_with("", clock, {1s, 0s, 3s})) ==
        entry_with("", clock, {1s, 0s, 3s}).stale_if_error_until);
}

TEST_CASE("purge_all reaches every tagged entry fetched before it", "[tag_epochs]") {
  TagEpochs tags;
  const std::vector<std::string> any{"whatever"};
  CHECK_FALSE(tags.purged_after(any, 0));
  const auto generation = tags.purge_all();
  CHECK(tags.purged_after(any, 0));
  CHECK_FALSE(tags.purged_after(any, generation));
  CHECK_FALSE(tags.purged_after({}, 0));  // untagged entries are never purged by tag
}

TEST_CASE("tag keys in Redis: the tag is the hash tag", "[tag_epochs]") {
  CHECK(tag_key("team-red") == "corral:tag:{team-red}");
  CHECK(tag_of_key("corral:tag:{team-red}") == "team-red");
  CHECK(tag_of_key(tag_key("a:b c")) == "a:b c");
  for (const auto* other : {"corral:tag:", "corral:tag:{", "corral:tag:x", "feat:1", ""}) {
    INFO(other);
    CHECK_FALSE(tag_of_key(other));
  }
}

TEST_CASE("purge counts read from Redis are kept until the tag's next purge", "[tag_epochs]") {
  TagEpochs tags;
  CHECK_FALSE(tags.known_count("red"));
  tags.remember_count("red", 4, tags.generation());
  CHECK(tags.known_count("red") == 4u);
  tags.purge("red");  // the tracking invalidation of its INCR: the count changed
  CHECK_FALSE(tags.known_count("red"));
  // A read begun before that purge must not bring its older count back.
  tags.remember_count("red", 4, tags.generation() - 1);
  CHECK_FALSE(tags.known_count("red"));
  tags.remember_count("red", 5, tags.generation());
  CHECK(tags.known_count("red") == 5u);
  tags.purge_all();
  CHECK_FALSE(tags.known_count("red"));
}
