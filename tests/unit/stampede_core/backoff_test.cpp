// Tests of exponential backoff delays and of the per-key backoff table.
#include <catch2/catch.hpp>

#include "cache/clock.hpp"
#include "cache/random.hpp"
#include "stampede/core/backoff.hpp"

using namespace corral;
using namespace corral::stampede;
using namespace std::chrono_literals;

TEST_CASE("delays double from min and stop at max", "[backoff]") {
  cache::SeededRandom random(1);
  const BackoffPolicy policy{100ms, 30s, false};
  CHECK(backoff_delay(0, policy, random) == 0ms);
  CHECK(backoff_delay(1, policy, random) == 100ms);
  CHECK(backoff_delay(2, policy, random) == 200ms);
  CHECK(backoff_delay(3, policy, random) == 400ms);
  CHECK(backoff_delay(9, policy, random) == 25600ms);
  CHECK(backoff_delay(10, policy, random) == 30s);
  CHECK(backoff_delay(1000, policy, random) == 30s);
  CHECK(backoff_delay(std::numeric_limits<int>::max(), policy, random) == 30s);
}

TEST_CASE("full jitter stays within [min, the capped delay]", "[backoff]") {
  cache::SeededRandom random(2);
  const BackoffPolicy policy{100ms, 30s, true};
  for (int failures = 1; failures < 20; ++failures) {
    const cache::Duration ceiling = backoff_delay(failures, {100ms, 30s, false}, random);
    cache::Duration low = ceiling;
    cache::Duration high{};
    for (int i = 0; i < 200; ++i) {
      const cache::Duration d = backoff_delay(failures, policy, random);
      REQUIRE(d >= 100ms);
      REQUIRE(d <= ceiling);
      low = std::min(low, d);
      high = std::max(high, d);
    }
    if (failures > 2) CHECK(low < high);  // it actually spreads
  }
}

TEST_CASE("a policy whose max is below its min uses min", "[backoff]") {
  cache::SeededRandom random(3);
  CHECK(backoff_delay(5, {1s, 10ms, false}, random) == 1s);
}

TEST_CASE("the table backs a key off after failures and forgets it on success", "[backoff]") {
  cache::ManualClock clock;
  cache::SeededRandom random(4);
  BackoffTable table;
  const BackoffPolicy policy{100ms, 1s, false};
  CHECK(table.allowed("k", clock.now()));

  CHECK(table.record_failure("k", clock.now(), policy, random) == clock.now() + 100ms);
  CHECK_FALSE(table.allowed("k", clock.now()));
  CHECK(table.allowed("other", clock.now()));
  clock.advance(100ms);
  CHECK(table.allowed("k", clock.now()));

  CHECK(table.record_failure("k", clock.now(), policy, random) == clock.now() + 200ms);
  clock.advance(200ms);
  CHECK(table.record_failure("k", clock.now(), policy, random) == clock.now() + 400ms);
  clock.advance(400ms);
  CHECK(table.record_failure("k", clock.now(), policy, random) == clock.now() + 800ms);
  clock.advance(800ms);
  CHECK(table.record_failure("k", clock.now(), policy, random) == clock.now() + 1s);
  CHECK(table.failures("k") == 5);

  table.record_success("k");
  CHECK(table.allowed("k", clock.now()));
  CHECK(table.failures("k") == 0);
  CHECK(table.size() == 0);
}

TEST_CASE("a key quiet for longer than max starts over", "[backoff]") {
  cache::ManualClock clock;
  cache::SeededRandom random(5);
  BackoffTable table;
  const BackoffPolicy policy{100ms, 1s, false};
  for (int i = 0; i < 4; ++i) table.record_failure("k", clock.now(), policy, random);
  CHECK(table.failures("k") == 4);
  clock.advance(10s);
  CHECK(table.record_failure("k", clock.now(), policy, random) == clock.now() + 100ms);
  CHECK(table.failures("k") == 1);
}

TEST_CASE("the table is bounded", "[backoff]") {
  cache::ManualClock clock;
  cache::SeededRandom random(6);
  BackoffTable table(3);
  const BackoffPolicy policy{100ms, 1s, false};
  for (const char* key : {"a", "b", "c"}) table.record_failure(key, clock.now(), policy, random);
  // Full of active backoffs: a new key is told to wait `min` but is not tracked.
  CHECK(table.record_failure("d", clock.now(), policy, random) == clock.now() + 100ms);
  CHECK(table.size() == 3);
  CHECK(table.allowed("d", clock.now()));
  // Once their retry times pass, old entries make room.
  clock.advance(100ms);
  table.record_failure("d", clock.now(), policy, random);
  CHECK(table.size() == 1);
  CHECK_FALSE(table.allowed("d", clock.now()));
}
