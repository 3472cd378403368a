// The early-refresh timing with a manual clock: the moment a hot key refreshes does not move with
// the request rate, grace covering the fetch means no early refresh, beta 0 means none at all.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "cache/clock.hpp"
#include "cache/entry.hpp"
#include "cache/random.hpp"
#include "stampede/core/refresh_timing.hpp"
#include "stampede/core/xfetch.hpp"

using namespace corral;
using namespace corral::stampede;
using cache::Duration;
using namespace std::chrono_literals;

namespace {

constexpr Duration kTtl = 2s;
constexpr Duration kDelta = 200ms;
constexpr int kTrials = 200;

class CountingRandom final : public cache::Random {
 public:
  explicit CountingRandom(std::uint64_t seed) : inner_(seed) {}
  double uniform() override {
    ++draws;
    return inner_.uniform();
  }
  int draws = 0;

 private:
  cache::SeededRandom inner_;
};

cache::Entry entry_at(cache::TimePoint stored, Duration grace) {
  return cache::Entry::make("$1\r\nv\r\n", stored, {kTtl, grace, 0s}, kDelta, false);
}

using Decide = std::function<bool(cache::TimePoint, const cache::Entry&, cache::Random&)>;

// Requests at `rate` per second from the store instant on, each counted as a hit the way the
// store counts them; returns how long before soft expiry the first one decided to refresh
// (nullopt: none did before expiry).
std::optional<Duration> lead_at_rate(double rate, cache::TimePoint stored, Duration grace,
                                     const Decide& decide, cache::Random& random) {
  cache::Entry entry = entry_at(stored, grace);
  const auto step = Duration(static_cast<Duration::rep>(1e9 / rate));
  for (cache::TimePoint now = stored + step; now < entry.soft_expiry; now += step) {
    ++entry.hits;
    if (decide(now, entry, random)) return entry.soft_expiry - now;
  }
  return std::nullopt;
}

struct Leads {
  double mean_s = 0;  // refreshes that never came before expiry count as a lead of 0
  Duration min = Duration::max();
  Duration max = Duration::min();
  int refreshed = 0;
};

// kTrials generations, each stored at a different instant (a different jitter fraction).
Leads leads_at_rate(double rate, Duration grace, const Decide& decide) {
  cache::SeededRandom random(7);
  Leads leads;
  cache::ManualClock clock;
  for (int trial = 0; trial < kTrials; ++trial) {
    clock.advance(std::chrono::microseconds(7919 * (trial + 1)));
    const auto lead = lead_at_rate(rate, clock.now(), grace, decide, random);
    if (!lead) continue;
    ++leads.refreshed;
    leads.mean_s += std::chrono::duration<double>(*lead).count() / kTrials;
    leads.min = std::min(leads.min, *lead);
    leads.max = std::max(leads.max, *lead);
  }
  return leads;
}

bool timed(cache::TimePoint now, const cache::Entry& entry, cache::Random& random) {
  return early_refresh(now, entry, 1.0, random) != EarlyRefresh::none;
}
bool per_request_xfetch(cache::TimePoint now, const cache::Entry& entry, cache::Random& random) {
  return should_refresh_early(now, entry, 1.0, random);
}

}  // namespace

TEST_CASE("a thousand requests a second refresh no earlier than a handful", "[refresh_timing]") {
  const Leads handful = leads_at_rate(5, 0s, timed);
  REQUIRE(handful.refreshed == kTrials);
  for (const double rate : {20.0, 100.0, 1000.0}) {
    const Leads busy = leads_at_rate(rate, 0s, timed);
    INFO("rate " << rate << "/s: mean lead " << busy.mean_s << " s, 5/s: " << handful.mean_s);
    CHECK(busy.refreshed == kTrials);
    // The same instant per generation: more requests only find it sooner after it comes, by
    // less than one interval of the handful's requests (200 ms).
    CHECK(busy.mean_s <= handful.mean_s + 0.2);
    // Never before beta * delta * (1 + kAheadJitter), never later than beta * delta.
    CHECK(busy.max <= std::chrono::duration_cast<Duration>(kDelta * (1 + kAheadJitter)));
    CHECK(busy.min >= kDelta - std::chrono::milliseconds(1));
  }
  // The per-request draw this replaces fails the same check: at 1000/s it runs at its cap.
  const Leads xfetch_busy = leads_at_rate(1000, 0s, per_request_xfetch);
  const Leads xfetch_handful = leads_at_rate(5, 0s, per_request_xfetch);
  CHECK(xfetch_busy.mean_s > xfetch_handful.mean_s + 0.2);
  CHECK(xfetch_busy.mean_s >= 0.8 * std::chrono::duration<double>(kTtl / 2).count());
}

TEST_CASE("the refresh-ahead instant is jittered per generation, not per request",
          "[refresh_timing]") {
  const Leads leads = leads_at_rate(1000, 0s, timed);
  // Spread over [delta, 1.5 delta]: a fleet's processes (each storing at its own instant) do not
  // all ask for the lock at once.
  CHECK(leads.max - leads.min >= kDelta * kAheadJitter / 2);
  cache::ManualClock clock;
  const auto entry = entry_at(clock.now(), 0s);
  CHECK(refresh_ahead_lead(entry, 1.0) == refresh_ahead_lead(entry, 1.0));
  CHECK(refresh_ahead_lead(entry, 2.0) >= 2 * kDelta);
}

TEST_CASE("grace that covers the fetch means no early refresh", "[refresh_timing]") {
  const Leads with_grace = leads_at_rate(1000, 10s, timed);
  CHECK(with_grace.refreshed == 0);
  cache::ManualClock clock;
  auto entry = entry_at(clock.now(), 10s);
  entry.hits = 1;
  CHECK(grace_covers_fetch(entry));
  CountingRandom random(3);
  CHECK(early_refresh(entry.soft_expiry - 1ms, entry, 1.0, random) == EarlyRefresh::none);
  CHECK(random.draws == 0);
  // Grace shorter than kGraceCoverDeltas fetches does not count: refresh ahead as without.
  const Leads short_grace = leads_at_rate(1000, 300ms, timed);
  CHECK(short_grace.refreshed == kTrials);
  CHECK_FALSE(grace_covers_fetch(entry_at(clock.now(), 300ms)));
}

TEST_CASE("beta 0 never refreshes early", "[refresh_timing]") {
  CountingRandom random(4);
  cache::ManualClock clock;
  for (const Duration grace : {Duration(0s), Duration(10s)}) {
    auto entry = entry_at(clock.now(), grace);
    for (int i = 1; i <= 2000; ++i) {
      entry.hits = static_cast<std::uint32_t>(i);
      const auto now = entry.stored_at + i * 1ms;
      CHECK(early_refresh(now, entry, 0.0, random) == EarlyRefresh::none);
    }
    CHECK(early_refresh(entry.soft_expiry + 1ms, entry, 0.0, random) == EarlyRefresh::none);
  }
  CHECK(random.draws == 0);
}

TEST_CASE("rarely read keys without grace keep XFetch's per-request draw", "[refresh_timing]") {
  cache::ManualClock clock;
  auto entry = entry_at(clock.now(), 0s);
  entry.hits = 2;  // two reads in 1.99 s: far below one per delta
  const auto now = entry.soft_expiry - 10ms;
  CHECK_FALSE(read_often(now, entry));
  CountingRandom random(5);
  int fired = 0;
  for (int i = 0; i < 1000; ++i)
    fired += early_refresh(now, entry, 1.0, random) != EarlyRefresh::none;
  CHECK(random.draws == 1000);
  // exp(-10 ms / 200 ms) = 0.95 of the draws fire, as should_refresh_early's would.
  CHECK(fired == Approx(951).margin(40));
  // Outside XFetch's window (capped at ttl / 2) nothing is drawn.
  CHECK(early_refresh(entry.stored_at + 900ms, entry, 1.0, random) == EarlyRefresh::none);
  CHECK(random.draws == 1000);
  // A hot key decides without drawing.
  entry.hits = 1000;
  CHECK(read_often(now, entry));
  CHECK(early_refresh(now, entry, 1.0, random) == EarlyRefresh::ahead);
  CHECK(random.draws == 1000);
}

TEST_CASE("an unknown delta never refreshes early; past expiry the stale path decides",
          "[refresh_timing]") {
  cache::ManualClock clock;
  auto entry = cache::Entry::make("v", clock.now(), {kTtl, 0s, 0s}, Duration(0), false);
  entry.hits = 100000;
  CountingRandom random(6);
  CHECK(early_refresh(entry.soft_expiry - 1ms, entry, 1.0, random) == EarlyRefresh::none);
  CHECK(early_refresh(entry.soft_expiry, entry, 1.0, random) == EarlyRefresh::xfetch);
  CHECK(random.draws == 0);
}
