// Tests of the store's lookups, replacement, invalidation, fill tickets and memory accounting.
#include <catch2/catch.hpp>

#include <thread>

#include <string>

#include "cache/clock.hpp"
#include "cache/store.hpp"

using namespace corral;
using namespace corral::cache;
using namespace std::chrono_literals;
using namespace std::string_view_literals;

namespace {

Store make_store(std::uint64_t max_memory = 64u << 20, int shards = 8) {
  return Store(config::CacheSettings{.max_memory = max_memory, .shards = shards});
}

Entry make_entry(const ManualClock& clock, std::string value, Lifetime lifetime = {10s, 5s, 60s}) {
  return Entry::make(std::move(value), clock.now(), lifetime, 3ms, false);
}

}  // namespace

TEST_CASE("a stored entry is found with its bytes and metadata; others miss", "[store]") {
  ManualClock clock;
  Store store = make_store();
  const CacheKey key{"user:1", "GET"};
  CHECK_FALSE(store.lookup(key, clock.now()));

  const Entry stored = make_entry(clock, "$5\r\nhello\r\n");
  REQUIRE(store.store(key, stored) == StoreResult::stored);
  const auto found = store.lookup(key, clock.now());
  REQUIRE(found);
  CHECK(found->value == "$5\r\nhello\r\n");
  CHECK(found->stored_at == stored.stored_at);
  CHECK(found->soft_expiry == stored.soft_expiry);
  CHECK(found->hard_expiry == stored.hard_expiry);
  CHECK(found->stale_if_error_until == stored.stale_if_error_until);
  CHECK(found->delta == 3ms);
  CHECK(found->hits == 1);
  CHECK_FALSE(found->negative);

  CHECK_FALSE(store.lookup({"user:1", "HGETALL"}, clock.now()));
  CHECK_FALSE(store.lookup({"user:2", "GET"}, clock.now()));
  CHECK_FALSE(store.lookup({"user:", "1GET"}, clock.now()));
}

TEST_CASE("lookups count hits; peek does not; replacement keeps the count", "[store]") {
  ManualClock clock;
  Store store = make_store();
  const CacheKey key{"k", "GET"};
  store.store(key, make_entry(clock, "old"));
  Entry out;
  for (int i = 0; i < 3; ++i) REQUIRE(store.lookup(key, clock.now(), out));
  CHECK(out.hits == 3);
  CHECK(store.peek(key, clock.now())->hits == 3);
  CHECK(store.peek(key, clock.now())->hits == 3);

  Entry renewed = make_entry(clock, "new value");
  renewed.hits = 1000;  // ignored
  REQUIRE(store.store(key, renewed) == StoreResult::stored);
  REQUIRE(store.lookup(key, clock.now(), out));
  CHECK(out.value == "new value");
  CHECK(out.hits == 4);
  CHECK(store.entries() == 1);
  CHECK(store.bytes() == Store::charge(key, 9));
}

TEST_CASE("negative entries round-trip and die at their ttl", "[store]") {
  ManualClock clock;
  Store store = make_store();
  const CacheKey key{"missing", "GET"};
  store.store(key, Entry::make("$-1\r\n", clock.now(), {30s, {}, {}}, {}, true));
  auto found = store.lookup(key, clock.now());
  REQUIRE(found);
  CHECK(found->negative);
  CHECK(found->state(clock.now()) == EntryState::fresh);
  clock.advance(30s);
  CHECK_FALSE(store.lookup(key, clock.now()));
  CHECK(store.entries() == 0);
  CHECK(store.stats().expirations == 1);
}

TEST_CASE("a lookup returns stale and error-only entries, and frees dead ones", "[store]") {
  ManualClock clock;
  Store store = make_store();
  const CacheKey key{"k", "GET"};
  store.store(key, make_entry(clock, "v", {10s, 5s, 60s}));
  clock.advance(12s);
  REQUIRE(store.lookup(key, clock.now()));
  CHECK(store.lookup(key, clock.now())->state(clock.now()) == EntryState::stale);
  clock.advance(10s);
  CHECK(store.lookup(key, clock.now())->state(clock.now()) == EntryState::error_only);
  clock.advance(48s);  // 70 s after storing: dead
  CHECK_FALSE(store.peek(key, clock.now()));
  CHECK(store.entries() == 1);  // peek frees nothing
  CHECK_FALSE(store.lookup(key, clock.now()));
  CHECK(store.entries() == 0);
  CHECK(store.bytes() == 0);
}

TEST_CASE("invalidate(user key) drops every variant of that key and nothing else", "[store]") {
  ManualClock clock;
  Store store = make_store();
  store.store({"user:1", "GET"}, make_entry(clock, "a"));
  store.store({"user:1", "HGET\0name"sv}, make_entry(clock, "b"));
  store.store({"user:1", "HGETALL"}, make_entry(clock, "c"));
  store.store({"user:10", "GET"}, make_entry(clock, "d"));
  store.store({"user:1\0GET"sv, "GET"}, make_entry(clock, "e"));
  REQUIRE(store.entries() == 5);

  CHECK(store.invalidate("user:1") == 3);
  CHECK_FALSE(store.lookup({"user:1", "GET"}, clock.now()));
  CHECK_FALSE(store.lookup({"user:1", "HGET\0name"sv}, clock.now()));
  CHECK_FALSE(store.lookup({"user:1", "HGETALL"}, clock.now()));
  CHECK(store.lookup({"user:10", "GET"}, clock.now()));
  CHECK(store.lookup({"user:1\0GET"sv, "GET"}, clock.now()));
  CHECK(store.invalidate("user:1") == 0);
  CHECK(store.entries() == 2);
}

TEST_CASE("erase drops one variant", "[store]") {
  ManualClock clock;
  Store store = make_store();
  store.store({"k", "GET"}, make_entry(clock, "a"));
  store.store({"k", "STRLEN"}, make_entry(clock, "b"));
  CHECK(store.erase({"k", "GET"}));
  CHECK_FALSE(store.erase({"k", "GET"}));
  CHECK(store.lookup({"k", "STRLEN"}, clock.now()));
}

TEST_CASE("invalidate_prefix drops every key with the prefix across all shards", "[store]") {
  ManualClock clock;
  Store store = make_store(64u << 20, 16);
  for (int i = 0; i < 200; ++i) {
    store.store({"feat:" + std::to_string(i), "GET"}, make_entry(clock, "f"));
    store.store({"product:" + std::to_string(i), "GET"}, make_entry(clock, "p"));
  }
  store.store({"feat", "GET"}, make_entry(clock, "no colon"));
  REQUIRE(store.entries() == 401);
  CHECK(store.invalidate_prefix("feat:") == 200);
  CHECK(store.entries() == 201);
  CHECK_FALSE(store.lookup({"feat:7", "GET"}, clock.now()));
  CHECK(store.lookup({"product:7", "GET"}, clock.now()));
  CHECK(store.lookup({"feat", "GET"}, clock.now()));
  CHECK(store.invalidate_prefix("") == 201);
  CHECK(store.entries() == 0);
}

TEST_CASE("invalidate_matching drops the keys the predicate accepts and supersedes fills",
          "[store]") {
  ManualClock clock;
  Store store = make_store(64u << 20, 16);
  for (int i = 0; i < 300; ++i) {
    store.store({"k:" + std::to_string(i), "GET"}, make_entry(clock, "v"));
  }
  store.store({"k:7", "STRLEN"}, make_entry(clock, "1"));
  const auto ticket = store.fill_ticket("k:5");
  // Odd-numbered keys stand for the keys of slots that changed owner.
  const auto odd = [](std::string_view key) { return (key.back() - '0') % 2 == 1; };
  CHECK(store.invalidate_matching(odd) == 151);  // 150 odd keys, and k:7's second variant
  CHECK(store.entries() == 150);
  CHECK_FALSE(store.lookup({"k:7", "STRLEN"}, clock.now()));
  CHECK_FALSE(store.lookup({"k:299", "GET"}, clock.now()));
  CHECK(store.lookup({"k:298", "GET"}, clock.now()));
  CHECK(store.store({"k:5", "GET"}, make_entry(clock, "pre-move"), ticket) ==
        StoreResult::superseded);
}

TEST_CASE("a thread's own invalidations supersede and drop its own fills only", "[store]") {
  ManualClock clock;
  Store store = make_store();
  const CacheKey key{"user:1", "GET"};
  // Io thread 1 takes a ticket and fetches; thread 0's copy of an older invalidation arrives late.
  std::uint64_t ticket = 0;
  std::thread([&] {
    Store::set_thread_filler(1);
    ticket = store.fill_ticket(key.user_key);
  }).join();
  std::thread([&] {
    Store::set_thread_filler(0);
    CHECK(store.invalidate_filled_here(key.user_key) == 0);
  }).join();
  CHECK(store.ticket_valid(key.user_key, ticket));
  CHECK(store.store(key, make_entry(clock, "v1"), ticket) == StoreResult::stored);
  std::thread([&] {  // thread 0 again, after the fill: thread 1's entry is not its to drop
    Store::set_thread_filler(0);
    CHECK(store.invalidate_filled_here(key.user_key) == 0);
  })
      .join();
  CHECK(store.lookup(key, clock.now())->value == "v1");
  std::thread([&] {  // thread 1's own listener reads a later write: the entry goes
    Store::set_thread_filler(1);
    CHECK(store.invalidate_filled_here(key.user_key) == 1);
    ticket = store.fill_ticket(key.user_key);
    store.invalidate_filled_here(key.user_key);  // and a fill in flight is superseded
  })
      .join();
  CHECK_FALSE(store.lookup(key, clock.now()));
  CHECK_FALSE(store.ticket_valid(key.user_key, ticket));
  CHECK(store.store(key, make_entry(clock, "v0"), ticket) == StoreResult::superseded);
  // A write through Corral (invalidate) supersedes every thread's fills; entries stored without
  // a ticket (no filler) go with any thread's invalidation.
  std::thread([&] {
    Store::set_thread_filler(1);
    ticket = store.fill_ticket(key.user_key);
  }).join();
  store.invalidate(key.user_key);
  CHECK(store.store(key, make_entry(clock, "v2"), ticket) == StoreResult::superseded);
  store.store(key, make_entry(clock, "untracked"));
  std::thread([&] {
    Store::set_thread_filler(0);
    CHECK(store.invalidate_filled_here(key.user_key) == 1);
  }).join();
}

TEST_CASE("clear empties the store and its accounting", "[store]") {
  ManualClock clock;
  Store store = make_store();
  for (int i = 0; i < 1000; ++i) store.store({std::to_string(i), "GET"}, make_entry(clock, "v"));
  CHECK(store.clear() == 1000);
  CHECK(store.entries() == 0);
  CHECK(store.bytes() == 0);
  store.store({"again", "GET"}, make_entry(clock, "v"));
  CHECK(store.lookup({"again", "GET"}, clock.now()));
}

TEST_CASE("memory accounting is exact: key + variant + value + kEntryOverhead", "[store]") {
  ManualClock clock;
  Store store = make_store();
  CHECK(Store::charge({"abc", "GET"}, 10) == 3 + 3 + 10 + kEntryOverhead);
  std::uint64_t expected = 0;
  for (int i = 0; i < 500; ++i) {
    const std::string user_key = "key:" + std::to_string(i);
    const std::string value(static_cast<std::size_t>(i), 'x');
    store.store({user_key, "GET"}, make_entry(clock, value));
    expected += Store::charge({user_key, "GET"}, value.size());
  }
  CHECK(store.bytes() == expected);
  CHECK(store.entries() == 500);
  // Replacing with a longer value charges the difference only.
  store.store({"key:0", "GET"}, make_entry(clock, std::string(100, 'y')));
  expected += 100;
  CHECK(store.bytes() == expected);
  for (int i = 0; i < 500; ++i) store.invalidate("key:" + std::to_string(i));
  CHECK(store.bytes() == 0);
  CHECK(store.entries() == 0);
}

TEST_CASE("an entry larger than a shard's budget is refused and drops the old one", "[store]") {
  ManualClock clock;
  Store store = make_store(4096, 4);  // 1024 bytes per shard
  CHECK(store.shard_budget() == 1024);
  const CacheKey key{"big", "GET"};
  REQUIRE(store.store(key, make_entry(clock, "small")) == StoreResult::stored);
  CHECK(store.store(key, make_entry(clock, std::string(1024, 'x'))) == StoreResult::too_large);
  CHECK_FALSE(store.lookup(key, clock.now()));
  CHECK(store.bytes() == 0);
  const std::size_t largest = 1024 - kEntryOverhead - 6;
  CHECK(store.store(key, make_entry(clock, std::string(largest, 'x'))) == StoreResult::stored);
  CHECK(store.bytes() == 1024);
}

TEST_CASE("a variant longer than 64 KiB cannot be cached", "[store]") {
  ManualClock clock;
  Store store = make_store();
  const std::string huge_variant(70000, 'f');
  store.store({"k", huge_variant}, make_entry(clock, "v"));
  CHECK(store.store({"k", huge_variant}, make_entry(clock, "v")) == StoreResult::too_large);
  CHECK_FALSE(store.lookup({"k", huge_variant}, clock.now()));
  CHECK(store.entries() == 0);
}

TEST_CASE("fill tickets: an invalidation during a fetch supersedes its fill", "[store]") {
  ManualClock clock;
  Store store = make_store();
  const CacheKey key{"user:1", "GET"};

  std::uint64_t ticket = store.fill_ticket(key.user_key);
  CHECK(store.store(key, make_entry(clock, "v1"), ticket) == StoreResult::stored);

  ticket = store.fill_ticket(key.user_key);
  store.invalidate(key.user_key);  // a write arrived while the fetch was in flight
  CHECK(store.store(key, make_entry(clock, "pre-write"), ticket) == StoreResult::superseded);
  CHECK_FALSE(store.lookup(key, clock.now()));

  ticket = store.fill_ticket(key.user_key);
  store.invalidate_prefix("user:");
  CHECK(store.store(key, make_entry(clock, "v2"), ticket) == StoreResult::superseded);

  ticket = store.fill_ticket(key.user_key);
  store.clear();
  CHECK(store.store(key, make_entry(clock, "v3"), ticket) == StoreResult::superseded);

  ticket = store.fill_ticket(key.user_key);
  store.store({"user:1", "HGETALL"}, make_entry(clock, "other variant"));  // not a write
  store.lookup(key, clock.now());
  CHECK(store.store(key, make_entry(clock, "v4"), ticket) == StoreResult::stored);
  CHECK(store.lookup(key, clock.now())->value == "v4");
}

TEST_CASE("set_delta updates an entry in place", "[store]") {
  ManualClock clock;
  Store store = make_store();
  const CacheKey key{"k", "GET"};
  CHECK_FALSE(store.set_delta(key, 5ms));
  store.store(key, make_entry(clock, "v"));
  CHECK(store.set_delta(key, 250ms));
  CHECK(store.peek(key, clock.now())->delta == 250ms);
}

TEST_CASE("sweep frees dead entries that nobody looks up", "[store]") {
  ManualClock clock;
  Store store = make_store(64u << 20, 4);
  for (int i = 0; i < 300; ++i) {
    const Lifetime lifetime = i % 3 == 0 ? Lifetime{1s, {}, {}} : Lifetime{1h, {}, {}};
    store.store({std::to_string(i), "GET"}, make_entry(clock, "v", lifetime));
  }
  clock.advance(2s);
  std::size_t swept = 0;
  for (int round = 0; round < 10; ++round) swept += store.sweep(clock.now(), 64);
  CHECK(swept == 100);
  CHECK(store.entries() == 200);
  CHECK(store.stats().expirations == 100);
}

TEST_CASE("variants and empty parts are distinct keys", "[store]") {
  ManualClock clock;
  Store store = make_store();
  store.store({"", "GET"}, make_entry(clock, "empty key"));
  store.store({"GET", ""}, make_entry(clock, "empty variant"));
  CHECK(store.lookup({"", "GET"}, clock.now())->value == "empty key");
  CHECK(store.lookup({"GET", ""}, clock.now())->value == "empty variant");
  CHECK(store.invalidate("") == 1);
  CHECK(store.lookup({"GET", ""}, clock.now()));
}

TEST_CASE("an entry's meta bytes are stored, charged and replaced with it", "[store]") {
  ManualClock clock;
  Store store = make_store();
  const CacheKey key{"page:1", "GET"};
  Entry entry = make_entry(clock, "$2\r\nhi\r\n");
  REQUIRE(store.store(key, entry) == StoreResult::stored);
  const auto bytes_without = store.bytes();
  CHECK(store.lookup(key, clock.now())->meta.empty());

  entry.meta = std::string("0 0 3\nabc", 9) + "tag\n";
  REQUIRE(store.store(key, entry) == StoreResult::stored);
  const auto found = store.lookup(key, clock.now());
  REQUIRE(found);
  CHECK(found->meta == entry.meta);
  CHECK(found->value == "$2\r\nhi\r\n");
  CHECK(store.bytes() == bytes_without + 4 + entry.meta.size());  // its length field and bytes

  entry.meta.clear();
  REQUIRE(store.store(key, entry) == StoreResult::stored);
  CHECK(store.lookup(key, clock.now())->meta.empty());
  CHECK(store.bytes() == bytes_without);
}
