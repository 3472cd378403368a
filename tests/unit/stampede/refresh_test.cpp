// Refreshes and origin protection: grace (stale-while-revalidate), early refresh timing,
// stale-if-error, backoff, the circuit breaker, negative caching and the origin concurrency cap.
#include "engine_support.hpp"

using namespace corral;
using namespace corral::test;
using stampede::LookupOutcome;

namespace {
// Caches `value` for `key` through a first miss.
void prime(Fixture& f, std::string_view key, std::string_view value,
           std::chrono::nanoseconds duration = 100ms) {
  const auto call = f.origin().calls();
  REQUIRE(f.get(key, 1000 + call));
  REQUIRE(f.origin().calls() == call + 1);
  f.origin().value(call, value, duration);
  f.run();
  REQUIRE(f.client->reply(1000 + call) == bulk(value));
}
}  // namespace

TEST_CASE("in grace the stale value is served at once with one background refresh", "[grace]") {
  auto p = policy();
  p.grace = 10s;
  Fixture f({p});
  prime(f, "p:1", "old");
  f.clock.advance(11s);
  for (int i = 1; i <= 5; ++i) {
    REQUIRE(f.get("p:1", i));
    CHECK(f.client->reply(i) == bulk("old"));
  }
  CHECK(f.origin().calls() == 2);  // one refresh for all five
  auto stats = f.stats();
  CHECK(stats.lookup(LookupOutcome::stale) == 5);
  CHECK(stats.background_refreshes == 1);
  CHECK(stats.stampede_blocked == 4);
  f.origin().value(1, "new");
  f.run();
  REQUIRE(f.get("p:1", 6));
  CHECK(f.client->reply(6) == bulk("new"));
  CHECK(f.runtime->store().peek({"p:1", "GET"}, f.clock.now())->state(f.clock.now()) ==
        cache::EntryState::fresh);
}

TEST_CASE("XFetch refreshes a hit near expiry when beta > 0, never with beta 0", "[xfetch]") {
  auto p = policy();
  SECTION("beta 1") {
    p.beta = 1.0;
    Fixture f({p});
    prime(f, "p:1", "v1", 1s);  // delta = 1s: the early window is min(10 s, ttl/2) = 5 s
    f.clock.advance(1s);
    for (int i = 1; i <= 20; ++i) REQUIRE(f.get("p:1", i));  // 9 s left: outside the window
    CHECK(f.origin().calls() == 1);
    f.clock.advance(std::chrono::milliseconds(8990));  // 10 ms left: p = exp(-0.01) ~ 0.99
    REQUIRE(f.get("p:1", 30));
    CHECK(f.client->reply(30) == bulk("v1"));  // served from the cache all the same
    REQUIRE(f.origin().calls() == 2);
    CHECK(f.stats().early_refreshes == 1);
    CHECK(f.stats().lookup(LookupOutcome::miss) == 1);
    f.origin().value(1, "v2");
    f.run();
    REQUIRE(f.get("p:1", 31));
    CHECK(f.client->reply(31) == bulk("v2"));  // replaced before it ever expired
  }
  SECTION("beta 0") {
    p.beta = 0;
    Fixture f({p});
    prime(f, "p:1", "v1", 1s);
    f.clock.advance(std::chrono::milliseconds(9999));
    for (int i = 1; i <= 200; ++i) REQUIRE(f.get("p:1", i));
    CHECK(f.origin().calls() == 1);
    CHECK(f.stats().early_refreshes == 0);
  }
}

namespace {
// Reads `key` at `rate` per second (manual clock) until a background refresh asks the origin;
// returns how long before soft expiry that was, or -1 ms when none did before expiry.
std::chrono::milliseconds refresh_lead(Fixture& f, std::string_view key, int rate,
                                       std::chrono::nanoseconds ttl) {
  const auto stored = f.clock.now();
  const auto calls = f.origin().calls();
  const auto step = std::chrono::nanoseconds(1'000'000'000 / rate);
  for (std::uint64_t tag = 1; f.clock.now() + step < stored + ttl; ++tag) {
    f.clock.advance(step);
    REQUIRE(f.get(key, tag));
    if (f.origin().calls() > calls) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(stored + ttl - f.clock.now());
    }
  }
  return std::chrono::milliseconds(-1);
}
}  // namespace

TEST_CASE("a hot key refreshes at the same moment at 1000 requests a second as at 5",
          "[refresh_timing]") {
  auto p = policy();
  p.ttl = 2s;
  p.beta = 1.0;
  std::chrono::milliseconds leads[2];
  int i = 0;
  for (const int rate : {5, 1000}) {
    Fixture f({p});
    prime(f, "p:1", "v1", 200ms);  // delta 200 ms
    leads[i++] = refresh_lead(f, "p:1", rate, p.ttl);
    CHECK(f.stats().early_refreshes == 1);
  }
  INFO("lead at 5/s " << leads[0].count() << " ms, at 1000/s " << leads[1].count() << " ms");
  CHECK(leads[0] >= 200ms);
  // One refresh-ahead instant per generation (from delta, not from the rate): the busy key
  // finds it at most one of the handful's request intervals sooner.
  CHECK(leads[1] >= leads[0]);
  CHECK(leads[1] <= leads[0] + 200ms);
  CHECK(leads[1] <= 300ms);  // per-request XFetch would fire ~1 s ahead (its ttl / 2 cap)
}

TEST_CASE("with grace covering the fetch a hot key is served stale once, not refreshed early",
          "[refresh_timing]") {
  auto p = policy();
  p.ttl = 2s;
  p.beta = 1.0;
  p.grace = 10s;
  Fixture f({p});
  prime(f, "p:1", "v1", 200ms);
  CHECK(refresh_lead(f, "p:1", 1000, p.ttl) == -1ms);
  CHECK(f.origin().calls() == 1);
  CHECK(f.stats().early_refreshes == 0);
  f.clock.advance(2ms);  // past soft expiry: the stale path refreshes, in the background
  REQUIRE(f.get("p:1", 9001));
  CHECK(f.client->reply(9001) == bulk("v1"));
  REQUIRE(f.origin().calls() == 2);
  CHECK(f.stats().background_refreshes == 1);
  CHECK(f.stats().lookup(LookupOutcome::stale) == 1);
  REQUIRE(f.get("p:1", 9002));  // coalesced with the refresh in flight
  CHECK(f.origin().calls() == 2);
  f.origin().value(1, "v2");
  f.run();
  REQUIRE(f.get("p:1", 9003));
  CHECK(f.client->reply(9003) == bulk("v2"));
}

TEST_CASE("in fleet mode a miss does not queue behind a background refresh", "[fleet]") {
  // A fleet refresh may wait a whole fetch for another process's lock; a miss reads the shared
  // copy instead (its own flight). Elsewhere a miss joins the refresh in flight.
  for (const bool shared : {true, false}) {
    auto p = policy();
    p.grace = 10s;
    p.shared = shared;
    p.origin = config::OriginKind::http;  // as fleet mode needs (the fixture's origin answers)
    Fixture f({p});
    prime(f, "p:1", "v1", 200ms);
    f.clock.advance(11s);
    REQUIRE(f.get("p:1", 1));  // stale: served, and refreshed in the background
    CHECK(f.client->reply(1) == bulk("v1"));
    REQUIRE(f.origin().calls() == 2);
    f.runtime->invalidate_key("p:1", stampede::InvalidationSource::tracking);
    REQUIRE(f.get("p:1", 2));
    INFO("shared: " << shared);
    CHECK(f.origin().calls() == (shared ? 3u : 2u));
    CHECK_FALSE(f.client->has(2));
    f.origin().value(shared ? 2 : 1, "v2");
    f.run();
    CHECK(f.client->reply(2) == bulk("v2"));
    if (shared) {  // the miss stored v2; the refresh still in flight starts no other fetch
      REQUIRE(f.get("p:1", 3));
      CHECK(f.client->reply(3) == bulk("v2"));
      CHECK(f.origin().calls() == 3);
    }
  }
}

TEST_CASE(
    "in fleet mode a shared copy read in grace is refreshed even if an invalidation "
    "refused its local copy",
    "[fleet]") {
  // The shared copy's plain key expiring is itself an invalidation (Redis tracks expiries):
  // when it reaches this process during the read, the local copy is refused, the refresh not.
  auto p = policy();
  p.grace = 30s;
  p.shared = true;
  p.origin = config::OriginKind::http;
  Fixture f({p});
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.origin().calls() == 1);
  f.runtime->invalidate_key("p:1", stampede::InvalidationSource::tracking);
  f.origin().answer_shared(0, "v1", {0ms, 30s, 200ms, false, std::nullopt});
  f.run();
  CHECK(f.client->reply(1) == bulk("v1"));
  CHECK_FALSE(f.runtime->store().peek({"p:1", "GET"}, f.clock.now()));
  REQUIRE(f.origin().calls() == 2);
  CHECK(f.stats().background_refreshes == 1);
  f.origin().answer_shared(1, "v2", {10s, 40s, 200ms, true, std::nullopt});
  f.run();
  REQUIRE(f.get("p:1", 2));
  CHECK(f.client->reply(2) == bulk("v2"));
  CHECK(f.origin().calls() == 2);
}

TEST_CASE("a failed fetch serves the stale-if-error copy and backs off", "[stale_if_error]") {
  auto p = policy();
  p.stale_if_error = 60s;
  p.backoff_min = 1s;
  Fixture f({p});
  prime(f, "p:1", "old");
  f.clock.advance(11s);  // past ttl, no grace: fetch first, the copy only if that fails
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.get("p:1", 2));
  CHECK_FALSE(f.client->has(1));
  REQUIRE(f.origin().calls() == 2);
  f.origin().fail(1);
  f.run();
  CHECK(f.client->reply(1) == bulk("old"));
  CHECK(f.client->reply(2) == bulk("old"));
  CHECK(f.stats().origin_errors == 1);

  // Backing off: answered from the copy without asking the origin.
  REQUIRE(f.get("p:1", 3));
  CHECK(f.client->reply(3) == bulk("old"));
  CHECK(f.origin().calls() == 2);
  f.clock.advance(2s);
  REQUIRE(f.get("p:1", 4));
  REQUIRE(f.origin().calls() == 3);
  f.origin().value(2, "new");
  f.run();
  CHECK(f.client->reply(4) == bulk("new"));
}

TEST_CASE("a failed fetch without a copy fails its waiters", "[stale_if_error]") {
  Fixture f;
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.get("p:1", 2));
  f.origin().fail(0);
  f.run();
  CHECK(f.client->reply(1) == "-ERR upstream connection lost\r\n");
  CHECK(f.client->reply(2) == "-ERR upstream connection lost\r\n");
  // No copy: fetched again despite the backoff (the breaker guards the origin).
  REQUIRE(f.get("p:1", 3));
  CHECK(f.origin().calls() == 2);
}

TEST_CASE("the breaker opens after failures, fails fast or serves stale, then probes",
          "[breaker]") {
  auto p = policy();
  p.breaker_failures = 2;
  p.breaker_open = 5s;
  p.stale_if_error = 1h;
  Fixture f({p});
  prime(f, "p:stale", "old");
  f.clock.advance(11s);
  for (int i = 0; i < 2; ++i) {
    REQUIRE(f.get("p:x", 10 + i));
    f.origin().fail(f.origin().calls() - 1);
    f.run();
  }
  CHECK(f.stats().breaker_state == 1);
  const auto calls = f.origin().calls();
  REQUIRE(f.get("p:x", 20));
  f.run();
  CHECK(f.client->reply(20) == "-ERR corral: origin circuit open for policy 'p:'\r\n");
  REQUIRE(f.get("p:stale", 21));
  f.run();
  CHECK(f.client->reply(21) == bulk("old"));
  CHECK(f.origin().calls() == calls);

  f.clock.advance(5s);
  REQUIRE(f.get("p:x", 30));  // the half-open probe
  REQUIRE(f.origin().calls() == calls + 1);
  CHECK(f.stats().breaker_state == 2);
  REQUIRE(f.get("p:y", 31));  // no second call while the probe is out
  f.run();
  CHECK(f.client->reply(31).starts_with("-ERR corral: origin circuit open"));
  f.origin().value(calls, "back");
  f.run();
  CHECK(f.client->reply(30) == bulk("back"));
  CHECK(f.stats().breaker_state == 0);
  REQUIRE(f.get("p:y", 32));
  CHECK(f.origin().calls() == calls + 2);
}

TEST_CASE("nil replies are cached for negative_ttl only", "[negative]") {
  auto p = policy();
  SECTION("negative_ttl > 0") {
    p.negative_ttl = 5s;
    Fixture f({p});
    REQUIRE(f.get("p:none", 1));
    f.origin().answer(0, origin::Outcome::nil, kNil);
    f.run();
    CHECK(f.client->reply(1) == kNil);
    REQUIRE(f.get("p:none", 2));
    CHECK(f.client->reply(2) == kNil);
    CHECK(f.origin().calls() == 1);
    CHECK(f.stats().lookup(LookupOutcome::negative) == 1);
    f.clock.advance(6s);
    REQUIRE(f.get("p:none", 3));
    CHECK(f.origin().calls() == 2);
  }
  SECTION("negative_ttl 0") {
    Fixture f({p});
    REQUIRE(f.get("p:none", 1));
    f.origin().answer(0, origin::Outcome::nil, kNil);
    f.run();
    CHECK(f.client->reply(1) == kNil);
    REQUIRE(f.get("p:none", 2));
    CHECK(f.origin().calls() == 2);
  }
}

TEST_CASE("max_origin_concurrency caps fetches of a policy", "[concurrency]") {
  auto p = policy();
  p.max_origin_concurrency = 1;
  p.max_origin_queue = 0;  // no queue: over the cap is refused at once (queued_fetch_test.cpp)
  p.grace = 1h;
  p.on_overflow = config::OnOverflow::error;
  Fixture f({p});
  prime(f, "p:stale", "old");
  f.clock.advance(11s);
  REQUIRE(f.get("p:1", 1));  // holds the only slot
  REQUIRE(f.origin().calls() == 2);
  // A foreground miss over the cap gets on_overflow...
  REQUIRE(f.get("p:2", 2));
  f.run();
  CHECK(f.client->reply(2) ==
        "-ERR corral: origin concurrency limit reached for policy 'p:' (max_origin_concurrency "
        "1)\r\n");
  // ...a background refresh is skipped: the stale value keeps serving.
  REQUIRE(f.get("p:stale", 3));
  CHECK(f.client->reply(3) == bulk("old"));
  CHECK(f.origin().calls() == 2);
  CHECK(f.stats().origin_in_flight == 1);
  f.origin().value(1, "v");
  f.run();
  CHECK(f.stats().origin_in_flight == 0);
  REQUIRE(f.get("p:2", 4));
  CHECK(f.origin().calls() == 3);
}

TEST_CASE("fetch_delay holds every origin fetch back and counts in delta", "[fetch_delay]") {
  auto p = policy();
  p.fetch_delay = 30ms;
  Fixture f({p});
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.get("p:1", 2));
  CHECK(f.origin().calls() == 0);
  f.run_for(100ms);
  REQUIRE(f.origin().calls() == 1);
  f.origin().value(0, "v", 10ms);
  f.run();
  CHECK(f.client->reply(1) == bulk("v"));
  CHECK(f.client->reply(2) == bulk("v"));
  CHECK(f.runtime->store().peek({"p:1", "GET"}, f.clock.now())->delta == 40ms);
}
