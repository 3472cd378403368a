// Tests of TTL jitter bounds and of entry lifetimes derived from a policy.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cache/random.hpp"
#include "stampede/core/jitter.hpp"

using namespace corral;
using namespace corral::stampede;
using cache::Duration;
using namespace std::chrono_literals;

namespace {

class CountingRandom final : public cache::Random {
 public:
  double uniform() override {
    ++draws;
    return inner_.uniform();
  }
  int draws = 0;

 private:
  cache::SeededRandom inner_{7};
};

}  // namespace

TEST_CASE("jitter 0 keeps the ttl exact and draws nothing", "[jitter]") {
  CountingRandom random;
  CHECK(jittered(60s, 0.0, random) == 60s);
  CHECK(jittered(1ms, 0.0, random) == 1ms);
  CHECK(random.draws == 0);
}

TEST_CASE("jittered ttls stay within [1-j, 1+j], spread over it, and average the ttl", "[jitter]") {
  cache::SeededRandom random(99);
  const Duration ttl = 300s;
  for (const double j : {0.05, 0.2, 0.5}) {
    double low = 2.0;
    double high = 0.0;
    double sum = 0.0;
    constexpr int kDraws = 10000;
    for (int i = 0; i < kDraws; ++i) {
      const double factor = std::chrono::duration<double>(jittered(ttl, j, random)) /
                            std::chrono::duration<double>(ttl);
      low = std::min(low, factor);
      high = std::max(high, factor);
      sum += factor;
    }
    INFO("jitter " << j);
    CHECK(low >= 1.0 - j);
    CHECK(high <= 1.0 + j);
    CHECK(low < 1.0 - j + 0.01 * j);  // the draws reach both ends
    CHECK(high > 1.0 + j - 0.01 * j);
    CHECK(sum / kDraws == Approx(1.0).margin(0.01));
  }
}

TEST_CASE("jitter is clamped below 1 so the ttl stays positive", "[jitter]") {
  cache::SeededRandom random(5);
  for (int i = 0; i < 1000; ++i) REQUIRE(jittered(10s, 5.0, random) > 0s);
  CHECK(jittered(0s, 0.5, random) == 0s);
}

TEST_CASE("entry_lifetime: positive entries get jittered ttl, grace and stale_if_error",
          "[jitter]") {
  config::PolicySettings policy;
  policy.ttl = std::chrono::milliseconds(60000);
  policy.jitter = 0.2;
  policy.grace = std::chrono::milliseconds(10000);
  policy.stale_if_error = std::chrono::milliseconds(3600000);
  policy.negative_ttl = std::chrono::milliseconds(30000);
  cache::SeededRandom random(11);

  const cache::Lifetime positive = entry_lifetime(policy, false, random);
  CHECK(positive.ttl >= 48s);
  CHECK(positive.ttl <= 72s);
  CHECK(positive.grace == 10s);
  CHECK(positive.stale_if_error == 1h);

  const cache::Lifetime negative = entry_lifetime(policy, true, random);
  CHECK(negative.ttl >= 24s);
  CHECK(negative.ttl <= 36s);
  CHECK(negative.grace == 0s);
  CHECK(negative.stale_if_error == 0s);

  policy.jitter = 0.0;
  CHECK(entry_lifetime(policy, false, random).ttl == 60s);
}
