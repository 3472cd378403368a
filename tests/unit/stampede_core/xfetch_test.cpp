// Statistical tests of XFetch early refresh against its analytic probability, with a fixed seed.
#include <catch2/catch.hpp>

#include <cmath>

#include "cache/clock.hpp"
#include "cache/entry.hpp"
#include "cache/random.hpp"
#include "stampede/core/xfetch.hpp"

using namespace corral;
using namespace corral::stampede;
using cache::Duration;
using namespace std::chrono_literals;

namespace {

// Counts draws so tests can see when XFetch skips the random source.
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

constexpr int kDraws = 10000;

double measured_fraction(Duration remaining, Duration ttl, Duration delta, double beta,
                         cache::Random& random) {
  const cache::TimePoint now = cache::ManualClock().now();
  int refreshes = 0;
  for (int i = 0; i < kDraws; ++i) {
    refreshes += should_refresh_early(now, now + remaining, ttl, delta, beta, random);
  }
  return static_cast<double>(refreshes) / kDraws;
}

// Four standard deviations of a binomial fraction, plus a little for p near 0 or 1.
double tolerance(double p) { return 4.0 * std::sqrt(p * (1 - p) / kDraws) + 0.002; }

}  // namespace

TEST_CASE("the refresh fraction matches exp(-remaining / (delta * beta))", "[xfetch]") {
  cache::SeededRandom random(20150901);
  const Duration ttl = 60s;
  const Duration delta = 100ms;
  for (const double beta : {0.5, 1.0, 2.0}) {
    for (const Duration remaining : {Duration(1ms), Duration(10ms), Duration(50ms), Duration(100ms),
                                     Duration(200ms), Duration(400ms)}) {
      const double expected = std::exp(-std::chrono::duration<double>(remaining).count() /
                                       (std::chrono::duration<double>(delta).count() * beta));
      CHECK(early_refresh_probability(remaining, ttl, delta, beta) == Approx(expected));
      const double measured = measured_fraction(remaining, ttl, delta, beta, random);
      INFO("beta " << beta << ", remaining " << remaining.count() << " ns");
      CHECK(measured == Approx(expected).margin(tolerance(expected)));
    }
  }
}

TEST_CASE("beta 0 never refreshes early, even at or past expiry", "[xfetch]") {
  CountingRandom random(1);
  CHECK(measured_fraction(1ms, 60s, 100ms, 0.0, random) == 0.0);
  CHECK(measured_fraction(-1s, 60s, 100ms, 0.0, random) == 0.0);
  CHECK(early_refresh_probability(1ms, 60s, 100ms, 0.0) == 0.0);
  CHECK(random.draws == 0);
}

TEST_CASE("at or past soft expiry it always refreshes", "[xfetch]") {
  CountingRandom random(2);
  CHECK(measured_fraction(0ms, 60s, 100ms, 1.0, random) == 1.0);
  CHECK(measured_fraction(-5s, 60s, 100ms, 1.0, random) == 1.0);
  CHECK(early_refresh_probability(0ms, 60s, 100ms, 1.0) == 1.0);
  CHECK(random.draws == 0);
}

TEST_CASE("the early window is capped by delta * beta and by the ttl", "[xfetch]") {
  CHECK(max_early_window(60s, 100ms, 1.0) == 1s);  // 10 deltas
  CHECK(max_early_window(60s, 100ms, 2.0) == 2s);
  CHECK(max_early_window(1s, 1s, 1.0) == 500ms);  // half the ttl
  CHECK(max_early_window(60s, 0ms, 1.0) == 0ms);  // nothing measured yet
  CHECK(max_early_window(60s, 100ms, 0.0) == 0ms);

  CountingRandom random(3);
  // Beyond 10 deltas: analytically e^-10.5 > 0, but the cap forbids it, without drawing.
  CHECK(measured_fraction(1050ms, 60s, 100ms, 1.0, random) == 0.0);
  CHECK(random.draws == 0);
  // A slow recompute on a short ttl: without the cap exp(-0.6) = 55% would refresh 0.6 s early.
  CHECK(measured_fraction(600ms, 1s, 1s, 1.0, random) == 0.0);
  CHECK(early_refresh_probability(600ms, 1s, 1s, 1.0) == 0.0);
  // Inside the cap the distribution is untouched.
  const double inside = measured_fraction(400ms, 1s, 1s, 1.0, random);
  CHECK(inside == Approx(std::exp(-0.4)).margin(tolerance(std::exp(-0.4))));
}

TEST_CASE("the Entry overload reads soft expiry, ttl and delta from the entry", "[xfetch]") {
  cache::ManualClock clock;
  const cache::Entry entry = cache::Entry::make("v", clock.now(), {10s, {}, {}}, 200ms, false);
  cache::SeededRandom random(4);
  CHECK_FALSE(should_refresh_early(clock.now(), entry, 1.0, random));  // 10 s left > 2 s cap
  clock.advance(10s);
  CHECK(should_refresh_early(clock.now(), entry, 1.0, random));
  int refreshes = 0;
  const cache::TimePoint near = entry.soft_expiry - 200ms;
  for (int i = 0; i < kDraws; ++i) refreshes += should_refresh_early(near, entry, 1.0, random);
  CHECK(refreshes / double(kDraws) == Approx(std::exp(-1.0)).margin(tolerance(std::exp(-1.0))));
}
