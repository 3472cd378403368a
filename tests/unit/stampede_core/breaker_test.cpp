// Tests of the circuit breaker state machine, including the single half-open probe.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "cache/clock.hpp"
#include "stampede/core/breaker.hpp"

using namespace corral;
using namespace corral::stampede;
using namespace std::chrono_literals;

namespace {

void fail(CircuitBreaker& breaker, cache::TimePoint now, int times) {
  for (int i = 0; i < times; ++i) {
    const Admission admission = breaker.admit(now);
    REQUIRE(admission == Admission::allowed);
    breaker.record_failure(admission, now);
  }
}

}  // namespace

TEST_CASE("closed until the threshold of consecutive failures, then open", "[breaker]") {
  cache::ManualClock clock;
  CircuitBreaker breaker(3, 5s);
  CHECK(breaker.state() == BreakerState::closed);
  fail(breaker, clock.now(), 2);
  breaker.record_success(Admission::allowed);  // a success resets the run
  CHECK(breaker.consecutive_failures() == 0);
  fail(breaker, clock.now(), 2);
  CHECK(breaker.state() == BreakerState::closed);
  fail(breaker, clock.now(), 1);
  CHECK(breaker.state() == BreakerState::open);
  CHECK(breaker.times_opened() == 1);
  CHECK(breaker.admit(clock.now()) == Admission::rejected);
  clock.advance(5s - 1ms);
  CHECK(breaker.admit(clock.now()) == Admission::rejected);
}

TEST_CASE("half-open lets exactly one probe through; success closes", "[breaker]") {
  cache::ManualClock clock;
  CircuitBreaker breaker(2, 5s);
  fail(breaker, clock.now(), 2);
  clock.advance(5s);
  const Admission probe = breaker.admit(clock.now());
  CHECK(probe == Admission::probe);
  CHECK(breaker.state() == BreakerState::half_open);
  for (int i = 0; i < 100; ++i) REQUIRE(breaker.admit(clock.now()) == Admission::rejected);
  clock.advance(1s);
  CHECK(breaker.admit(clock.now()) == Admission::rejected);
  breaker.record_success(probe);
  CHECK(breaker.state() == BreakerState::closed);
  CHECK(breaker.admit(clock.now()) == Admission::allowed);
  CHECK(breaker.consecutive_failures() == 0);
}

TEST_CASE("a failed probe opens the breaker again for another full period", "[breaker]") {
  cache::ManualClock clock;
  CircuitBreaker breaker(1, 5s);
  fail(breaker, clock.now(), 1);
  clock.advance(5s);
  const Admission probe = breaker.admit(clock.now());
  REQUIRE(probe == Admission::probe);
  clock.advance(1s);
  breaker.record_failure(probe, clock.now());
  CHECK(breaker.state() == BreakerState::open);
  CHECK(breaker.times_opened() == 2);
  clock.advance(5s - 1ms);
  CHECK(breaker.admit(clock.now()) == Admission::rejected);
  clock.advance(1ms);
  CHECK(breaker.admit(clock.now()) == Admission::probe);
}

TEST_CASE("late results of calls admitted before opening do not move the breaker", "[breaker]") {
  cache::ManualClock clock;
  CircuitBreaker breaker(2, 5s);
  const Admission early = breaker.admit(clock.now());
  fail(breaker, clock.now(), 2);
  REQUIRE(breaker.state() == BreakerState::open);
  breaker.record_success(early);
  CHECK(breaker.state() == BreakerState::open);
  clock.advance(5s);
  const Admission probe = breaker.admit(clock.now());
  breaker.record_success(early);
  breaker.record_failure(early, clock.now());
  CHECK(breaker.state() == BreakerState::half_open);
  breaker.record_success(probe);
  CHECK(breaker.state() == BreakerState::closed);
}

TEST_CASE("a probe that never reports is replaced after another period", "[breaker]") {
  cache::ManualClock clock;
  CircuitBreaker breaker(1, 5s);
  fail(breaker, clock.now(), 1);
  clock.advance(5s);
  REQUIRE(breaker.admit(clock.now()) == Admission::probe);  // lost
  clock.advance(5s - 1ms);
  CHECK(breaker.admit(clock.now()) == Admission::rejected);
  clock.advance(1ms);
  CHECK(breaker.admit(clock.now()) == Admission::probe);
}

TEST_CASE("a threshold of 0 disables the breaker", "[breaker]") {
  cache::ManualClock clock;
  CircuitBreaker breaker(0, 5s);
  fail(breaker, clock.now(), 1000);
  CHECK(breaker.state() == BreakerState::closed);
}

TEST_CASE("built from a policy", "[breaker]") {
  config::PolicySettings policy;
  policy.breaker_failures = 2;
  policy.breaker_open = std::chrono::milliseconds(100);
  cache::ManualClock clock;
  CircuitBreaker breaker(policy);
  fail(breaker, clock.now(), 2);
  CHECK(breaker.state() == BreakerState::open);
  clock.advance(100ms);
  CHECK(breaker.admit(clock.now()) == Admission::probe);
  CHECK(to_string(breaker.state()) == "half_open");
}

TEST_CASE("two threads racing on a half-open breaker get one probe between them",
          "[breaker][concurrency]") {
  cache::ManualClock clock;
  for (int round = 0; round < 200; ++round) {
    CircuitBreaker breaker(1, 1s);
    fail(breaker, clock.now(), 1);
    clock.advance(1s);
    std::atomic<int> probes{0};
    auto race = [&] {
      for (int i = 0; i < 50; ++i) probes += breaker.admit(clock.now()) == Admission::probe;
    };
    std::thread other(race);
    race();
    other.join();
    REQUIRE(probes == 1);
  }
}
