// Tests that a hold set by one Sentinel's announced failover outlives another Sentinel's abort,
// ends when the last one aborts or the primary changes, and lapses by itself.
#include <catch2/catch.hpp>

#include <chrono>

#include "upstream/sentinel/announced_failovers.hpp"

using namespace corral::upstream;
using namespace std::chrono_literals;

namespace {
const AnnouncedFailovers::Clock::time_point kStart{};
}

TEST_CASE("a non-leader's abort keeps the leader's hold", "[upstream][sentinel]") {
  AnnouncedFailovers failovers(10s);
  // An objective-down failover: two Sentinels try, one is elected, the other gives up.
  failovers.announced(0, kStart);
  failovers.announced(1, kStart + 10ms);
  failovers.announced(0, kStart + 100ms);             // the leader's later steps
  CHECK_FALSE(failovers.aborted(1, kStart + 200ms));  // -failover-abort-not-elected
  CHECK(failovers.in_progress(kStart + 200ms));
  CHECK(failovers.aborted(0, kStart + 300ms));  // the leader's own abort ends the hold
  CHECK_FALSE(failovers.in_progress(kStart + 300ms));
}

TEST_CASE("an abort by a Sentinel that announced nothing ends no other's hold",
          "[upstream][sentinel]") {
  AnnouncedFailovers failovers(10s);
  failovers.announced(2, kStart);
  CHECK_FALSE(failovers.aborted(0, kStart + 1ms));
  CHECK(failovers.in_progress(kStart + 1ms));
  // Its announcement missed (a subscription reopened): with none in progress the abort ends it.
  AnnouncedFailovers none(10s);
  CHECK(none.aborted(0, kStart));
}

TEST_CASE("a switch ends every announced failover", "[upstream][sentinel]") {
  AnnouncedFailovers failovers(10s);
  failovers.announced(0, kStart);
  failovers.announced(1, kStart);
  failovers.ended();
  CHECK_FALSE(failovers.in_progress(kStart));
  // A non-leader's abort after the switch releases nothing that is still needed.
  CHECK(failovers.aborted(1, kStart + 1s));
}

TEST_CASE("an announcement lapses after the bound from its last step", "[upstream][sentinel]") {
  AnnouncedFailovers failovers(10s);
  failovers.announced(0, kStart);
  failovers.announced(1, kStart + 4s);
  CHECK(failovers.in_progress(kStart + 9999ms));
  // Sentinel 0 fell silent (its +switch-master lost): from 10 s on only Sentinel 1's counts.
  CHECK_FALSE(failovers.aborted(2, kStart + 10s));
  CHECK(failovers.aborted(1, kStart + 10s));

  AnnouncedFailovers silent(10s);
  silent.announced(0, kStart);
  silent.announced(0, kStart + 5s);  // a later step restarts its bound
  CHECK(silent.in_progress(kStart + 14s));
  CHECK_FALSE(silent.in_progress(kStart + 15s));
}
