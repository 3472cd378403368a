// Tests of an entry's lifetime windows: fresh -> stale (grace) -> error-only -> dead.
#include <catch2/catch.hpp>

#include "cache/clock.hpp"
#include "cache/entry.hpp"
#include "cache/node.hpp"

using namespace corral::cache;
using namespace std::chrono_literals;

TEST_CASE("Entry::make derives every deadline from the lifetime", "[entry]") {
  ManualClock clock;
  const TimePoint now = clock.now();
  const Entry entry = Entry::make("$1\r\nx\r\n", now, {10s, 5s, 60s}, 20ms, false);
  CHECK(entry.stored_at == now);
  CHECK(entry.soft_expiry == now + 10s);
  CHECK(entry.hard_expiry == now + 15s);
  CHECK(entry.stale_if_error_until == now + 70s);
  CHECK(entry.ttl() == 10s);
  CHECK(entry.usable_until() == now + 70s);
  CHECK(entry.delta == 20ms);
  CHECK(entry.hits == 0);
  CHECK_FALSE(entry.negative);
}

TEST_CASE("entry states follow fresh, stale, error_only, dead at the exact boundaries", "[entry]") {
  ManualClock clock;
  const Entry entry = Entry::make("v", clock.now(), {10s, 5s, 60s}, {}, false);
  CHECK(entry.state(clock.now()) == EntryState::fresh);
  clock.advance(10s - 1ms);
  CHECK(entry.state(clock.now()) == EntryState::fresh);
  clock.advance(1ms);  // soft expiry
  CHECK(entry.state(clock.now()) == EntryState::stale);
  clock.advance(5s - 1ms);
  CHECK(entry.state(clock.now()) == EntryState::stale);
  clock.advance(1ms);  // hard expiry: end of grace
  CHECK(entry.state(clock.now()) == EntryState::error_only);
  clock.advance(55s - 1ms);
  CHECK(entry.state(clock.now()) == EntryState::error_only);
  clock.advance(1ms);  // end of stale_if_error
  CHECK(entry.state(clock.now()) == EntryState::dead);
  clock.advance(24h);
  CHECK(entry.state(clock.now()) == EntryState::dead);
}

TEST_CASE("a stale_if_error shorter than grace leaves no error-only window", "[entry]") {
  ManualClock clock;
  const Entry entry = Entry::make("v", clock.now(), {10s, 30s, 5s}, {}, false);
  clock.advance(20s);
  CHECK(entry.state(clock.now()) == EntryState::stale);
  clock.advance(20s);
  CHECK(entry.state(clock.now()) == EntryState::dead);
  CHECK(entry.usable_until() == entry.hard_expiry);
}

TEST_CASE("a negative entry without grace goes from fresh straight to dead", "[entry]") {
  ManualClock clock;
  const Entry entry = Entry::make("$-1\r\n", clock.now(), {30s, {}, {}}, {}, true);
  CHECK(entry.negative);
  CHECK(entry.state(clock.now()) == EntryState::fresh);
  clock.advance(30s - 1ms);
  CHECK(entry.state(clock.now()) == EntryState::fresh);
  clock.advance(1ms);
  CHECK(entry.state(clock.now()) == EntryState::dead);
}

TEST_CASE("a zero ttl entry is never fresh", "[entry]") {
  ManualClock clock;
  const Entry entry = Entry::make("v", clock.now(), {{}, 1s, {}}, {}, false);
  CHECK(entry.state(clock.now()) == EntryState::stale);
}

TEST_CASE("state names", "[entry]") {
  CHECK(to_string(EntryState::fresh) == "fresh");
  CHECK(to_string(EntryState::stale) == "stale");
  CHECK(to_string(EntryState::error_only) == "error_only");
  CHECK(to_string(EntryState::dead) == "dead");
}

TEST_CASE("per-entry overhead stays under 100 bytes", "[entry]") {
  STATIC_REQUIRE(sizeof(detail::Node) == 64);
  STATIC_REQUIRE(kEntryOverhead < 100);
  // Reported for the record (the Entry snapshot is what lookups copy out, not what is stored:
  // its meta string costs the stored node nothing unless an entry has meta bytes).
  INFO("sizeof(Entry) = " << sizeof(Entry));
  CHECK(sizeof(Entry) <= 128);
}
