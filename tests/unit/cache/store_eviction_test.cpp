// Tests of SIEVE eviction under a memory limit: the budget is never exceeded, entries hit since
// the hand last passed survive, one-hit wonders go first.
#include <catch2/catch.hpp>

#include <string>

#include "cache/clock.hpp"
#include "cache/store.hpp"

using namespace corral;
using namespace corral::cache;
using namespace std::chrono_literals;

namespace {

// Every key "k<digit>" with variant "GET" and a 10-byte value costs the same; other keys differ.
constexpr std::size_t kValueSize = 10;
const std::uint64_t kEntryCost = Store::charge({"k0", "GET"}, kValueSize);

Store single_shard_store(std::uint64_t entries_that_fit) {
  return Store(config::CacheSettings{.max_memory = entries_that_fit * kEntryCost, .shards = 1});
}

void put(Store& store, const ManualClock& clock, const std::string& user_key,
         Lifetime lifetime = {1h, {}, {}}) {
  REQUIRE(store.store({user_key, "GET"}, Entry::make(std::string(kValueSize, 'v'), clock.now(),
                                                     lifetime, {}, false)) == StoreResult::stored);
}

bool has(Store& store, const std::string& user_key, TimePoint now) {
  return store.peek({user_key, "GET"}, now).has_value();
}

}  // namespace

TEST_CASE("SIEVE: the hand skips visited entries, clearing their bit, and evicts the next",
          "[store][sieve]") {
  ManualClock clock;
  Store store = single_shard_store(3);
  put(store, clock, "k1");
  put(store, clock, "k2");
  put(store, clock, "k3");
  REQUIRE(store.lookup({"k1", "GET"}, clock.now()));  // k1 visited

  put(store, clock, "k4");  // hand at k1 (visited: cleared, spared) -> k2 evicted
  CHECK(has(store, "k1", clock.now()));
  CHECK_FALSE(has(store, "k2", clock.now()));
  CHECK(has(store, "k3", clock.now()));
  CHECK(has(store, "k4", clock.now()));

  // The hand now rests on k3. With k3 and k4 visited it clears both, passes the head, wraps to
  // the tail and takes k1, whose bit it cleared on the previous pass.
  REQUIRE(store.lookup({"k3", "GET"}, clock.now()));
  REQUIRE(store.lookup({"k4", "GET"}, clock.now()));
  put(store, clock, "k5");
  CHECK_FALSE(has(store, "k1", clock.now()));
  CHECK(has(store, "k3", clock.now()));
  CHECK(has(store, "k4", clock.now()));
  put(store, clock, "k6");  // the hand moved on to k3, whose bit is now clear
  CHECK_FALSE(has(store, "k3", clock.now()));
  CHECK(has(store, "k4", clock.now()));
  CHECK(has(store, "k5", clock.now()));
  CHECK(has(store, "k6", clock.now()));
  CHECK(store.evictions() == 3);
  CHECK(store.entries() == 3);
}

TEST_CASE("SIEVE keeps a frequently hit key over a stream of one-hit wonders", "[store][sieve]") {
  ManualClock clock;
  Store store = single_shard_store(8);
  put(store, clock, "hot");
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(store.lookup({"hot", "GET"}, clock.now()));
    put(store, clock, "once:" + std::to_string(i));
  }
  CHECK(has(store, "hot", clock.now()));
  CHECK(store.evictions() > 990);
  CHECK(store.entries() + store.evictions() == 1001);
}

TEST_CASE("bytes never exceed the budget under sustained inserts", "[store][sieve]") {
  ManualClock clock;
  const std::uint64_t budget = 16 * 1024;
  Store store(config::CacheSettings{.max_memory = budget, .shards = 4});
  std::uint64_t inserted = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::string key = "key:" + std::to_string(i);
    const std::string value(static_cast<std::size_t>(i % 300), 'x');
    REQUIRE(store.store({key, "GET"}, Entry::make(value, clock.now(), {1h, {}, {}}, {}, false)) ==
            StoreResult::stored);
    ++inserted;
    if (i % 3 == 0) store.lookup({"key:" + std::to_string(i / 2), "GET"}, clock.now());
    REQUIRE(store.bytes() <= budget);
  }
  CHECK(store.evictions() > 0);
  CHECK(store.entries() + store.evictions() == inserted);
}

TEST_CASE("a dead entry under the hand is taken even when visited, counted as expired",
          "[store][sieve]") {
  ManualClock clock;
  Store store = single_shard_store(2);
  put(store, clock, "k1", {1s, {}, {}});
  put(store, clock, "k2");
  REQUIRE(store.lookup({"k1", "GET"}, clock.now()));  // visited
  clock.advance(2s);
  put(store, clock, "k3");
  CHECK_FALSE(store.peek({"k1", "GET"}, clock.now() - 2s));  // gone, not merely dead
  CHECK(has(store, "k2", clock.now()));
  CHECK(store.evictions() == 0);
  CHECK(store.stats().expirations == 1);
}

TEST_CASE("replacing an entry while full evicts others, never the renewed key", "[store][sieve]") {
  ManualClock clock;
  Store store = single_shard_store(3);
  put(store, clock, "k1");
  put(store, clock, "k2");
  put(store, clock, "k3");
  // The renewed k1 is larger, so one more entry must go to fit it.
  REQUIRE(store.store({"k1", "GET"}, Entry::make(std::string(kValueSize + 1, 'v'), clock.now(),
                                                 {1h, {}, {}}, {}, false)) == StoreResult::stored);
  CHECK(has(store, "k1", clock.now()));
  CHECK(store.entries() == 2);
  CHECK(store.bytes() <= store.shard_budget());
}
