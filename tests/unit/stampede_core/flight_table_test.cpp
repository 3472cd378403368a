// Tests of the singleflight bookkeeping: one leader per key, bounded followers, overflow choice.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>

#include "stampede/core/flight_table.hpp"

using namespace corral;
using namespace corral::stampede;

namespace {

struct Payload {
  int value = 0;
};

}  // namespace

TEST_CASE("the first request leads, the next ones follow the same flight", "[flight]") {
  FlightTable<Payload> table;
  const auto leader = table.join("k", 10);
  REQUIRE(leader.role == FlightRole::leader);
  REQUIRE(leader.flight);
  const auto follower = table.join("k", 10);
  CHECK(follower.role == FlightRole::follower);
  CHECK(follower.flight == leader.flight);
  CHECK(table.waiters("k") == 1u);
  CHECK(table.join("other", 10).role == FlightRole::leader);
  CHECK(table.size() == 2);

  leader.flight->value = 42;  // what the async layer would publish to the followers
  CHECK(table.finish("k", leader.flight) == 1);
  CHECK(follower.flight->value == 42);  // the payload outlives the table entry
  CHECK_FALSE(table.waiters("k"));
  CHECK(table.join("k", 10).role == FlightRole::leader);  // a new flight
}

TEST_CASE("followers beyond max_waiters overflow; leaving frees a place", "[flight]") {
  FlightTable<Payload> table;
  const auto leader = table.join("k", 2);
  const auto first = table.join("k", 2);
  const auto second = table.join("k", 2);
  CHECK(first.role == FlightRole::follower);
  CHECK(second.role == FlightRole::follower);
  const auto third = table.join("k", 2);
  CHECK(third.role == FlightRole::overflow);
  CHECK_FALSE(third.flight);
  table.leave("k", first.flight);
  CHECK(table.waiters("k") == 1u);
  CHECK(table.join("k", 2).role == FlightRole::follower);
  CHECK(table.finish("k", leader.flight) == 2);
}

TEST_CASE("max_waiters 0 lets nobody wait", "[flight]") {
  FlightTable<Payload> table;
  table.join("k", 0);
  CHECK(table.join("k", 0).role == FlightRole::overflow);
}

TEST_CASE("stale finish and leave calls for an old flight change nothing", "[flight]") {
  FlightTable<Payload> table;
  const auto old_flight = table.join("k", 10);
  table.finish("k", old_flight.flight);
  const auto current = table.join("k", 10);
  table.join("k", 10);
  table.leave("k", old_flight.flight);
  CHECK(table.waiters("k") == 1u);
  CHECK(table.finish("k", old_flight.flight) == 0);
  CHECK(table.waiters("k") == 1u);
  CHECK(table.finish("k", current.flight) == 1);
}

TEST_CASE("a payload factory runs for leaders only", "[flight]") {
  FlightTable<Payload> table;
  int made = 0;
  auto make = [&] {
    ++made;
    return std::make_shared<Payload>(Payload{7});
  };
  CHECK(table.join("k", 5, make).flight->value == 7);
  table.join("k", 5, make);
  CHECK(made == 1);
}

TEST_CASE("overflow actions follow on_overflow and the presence of a stale copy", "[flight]") {
  using config::OnOverflow;
  CHECK(overflow_action(OnOverflow::stale, true) == OverflowAction::serve_stale);
  CHECK(overflow_action(OnOverflow::stale, false) == OverflowAction::fail);
  CHECK(overflow_action(OnOverflow::error, true) == OverflowAction::fail);
  CHECK(overflow_action(OnOverflow::passthrough, true) == OverflowAction::passthrough);
  CHECK(overflow_action(OnOverflow::passthrough, false) == OverflowAction::passthrough);
}

TEST_CASE("two threads joining the same keys elect one leader per flight",
          "[flight][concurrency]") {
  FlightTable<Payload> table(4);
  std::atomic<int> leaders{0};
  std::atomic<int> followers{0};
  auto run = [&] {
    for (int i = 0; i < 2000; ++i) {
      const std::string key = "key:" + std::to_string(i);
      const auto ticket = table.join(key, 100);
      (ticket.role == FlightRole::leader ? leaders : followers)++;
    }
  };
  std::thread other(run);
  run();
  other.join();
  CHECK(leaders == 2000);
  CHECK(followers == 2000);
  CHECK(table.size() == 2000);
}
