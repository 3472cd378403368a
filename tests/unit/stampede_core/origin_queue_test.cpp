// Tests of the origin queue's bookkeeping: slots up to max_origin_concurrency, then a bounded
// FIFO of waiting fetches that take over the slots of fetches that end, withdrawal on timeout.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cache/clock.hpp"
#include "stampede/core/origin_queue.hpp"

using namespace corral;
using namespace corral::stampede;
using namespace std::chrono_literals;

TEST_CASE("fetches start up to the concurrency, then queue up to the bound, then are refused",
          "[origin_queue]") {
  cache::ManualClock clock;
  OriginQueue<int> queue;
  const OriginLimits limits{2, 3};
  CHECK(queue.enter(1, clock.now(), limits).entry == OriginEntry::started);
  CHECK(queue.enter(2, clock.now(), limits).entry == OriginEntry::started);
  CHECK(queue.in_flight() == 2);
  for (int i = 3; i <= 5; ++i)
    CHECK(queue.enter(i, clock.now(), limits).entry == OriginEntry::queued);
  CHECK(queue.depth() == 3);
  CHECK(queue.enter(6, clock.now(), limits).entry == OriginEntry::full);
  CHECK(queue.depth() == 3);
  CHECK(queue.in_flight() == 2);
}

TEST_CASE("an ending fetch hands its slot to the oldest queued one, with its wait",
          "[origin_queue]") {
  cache::ManualClock clock;
  OriginQueue<int> queue;
  const OriginLimits limits{1, 10};
  REQUIRE(queue.enter(0, clock.now(), limits).entry == OriginEntry::started);
  for (int i = 1; i <= 3; ++i) {
    REQUIRE(queue.enter(i, clock.now(), limits).entry == OriginEntry::queued);
    clock.advance(10ms);
  }
  std::vector<int> order;
  while (auto next = queue.release(clock.now(), limits)) {
    order.push_back(next->payload);
    // Fetch i entered at 10 ms * (i - 1) and is handed the slot at 30 ms + 5 ms * (i - 1).
    CHECK(next->waited == 30ms - 10ms * (next->payload - 1) + 5ms * (next->payload - 1));
    CHECK(queue.in_flight() == 1);  // the slot changed hands, the count did not move
    clock.advance(5ms);
  }
  CHECK(order == std::vector<int>{1, 2, 3});
  CHECK(queue.in_flight() == 0);  // the last release found nobody waiting
  CHECK(queue.depth() == 0);
  CHECK(queue.enter(4, clock.now(), limits).entry == OriginEntry::started);
}

TEST_CASE("a withdrawn fetch leaves its place; one already handed a slot cannot withdraw",
          "[origin_queue]") {
  cache::ManualClock clock;
  OriginQueue<int> queue;
  const OriginLimits limits{1, 2};
  REQUIRE(queue.enter(0, clock.now(), limits).entry == OriginEntry::started);
  const auto first = queue.enter(1, clock.now(), limits);
  const auto second = queue.enter(2, clock.now(), limits);
  REQUIRE(first.entry == OriginEntry::queued);
  REQUIRE(second.entry == OriginEntry::queued);
  CHECK(queue.enter(3, clock.now(), limits).entry == OriginEntry::full);
  CHECK(queue.withdraw(first.ticket));
  CHECK_FALSE(queue.withdraw(first.ticket));  // once only
  CHECK(queue.depth() == 1);
  // Its place is free again.
  const auto third = queue.enter(3, clock.now(), limits);
  CHECK(third.entry == OriginEntry::queued);
  const auto next = queue.release(clock.now(), limits);
  REQUIRE(next);
  CHECK(next->payload == 2);
  CHECK_FALSE(queue.withdraw(second.ticket));  // its handoff is on its way
  CHECK(queue.withdraw(third.ticket));
  CHECK(queue.depth() == 0);
  CHECK(queue.in_flight() == 1);
}

TEST_CASE("max_origin_queue 0 refuses at once; no concurrency limit never queues",
          "[origin_queue]") {
  cache::ManualClock clock;
  OriginQueue<int> queue;
  CHECK(queue.enter(1, clock.now(), {1, 0}).entry == OriginEntry::started);
  CHECK(queue.enter(2, clock.now(), {1, 0}).entry == OriginEntry::full);
  for (int i = 0; i < 100; ++i)
    CHECK(queue.enter(i, clock.now(), {0, 0}).entry == OriginEntry::started);
  CHECK(queue.in_flight() == 101);
}

TEST_CASE("a limit lowered by a reload gives slots up instead of handing them on",
          "[origin_queue]") {
  cache::ManualClock clock;
  OriginQueue<int> queue;
  for (int i = 0; i < 3; ++i)
    REQUIRE(queue.enter(i, clock.now(), {3, 5}).entry == OriginEntry::started);
  REQUIRE(queue.enter(9, clock.now(), {3, 5}).entry == OriginEntry::queued);
  const OriginLimits lowered{1, 5};
  CHECK_FALSE(queue.release(clock.now(), lowered));  // 3 in flight > 1: given up
  CHECK_FALSE(queue.release(clock.now(), lowered));  // 2 > 1
  CHECK(queue.in_flight() == 1);
  const auto next = queue.release(clock.now(), lowered);  // at the limit: handed on
  REQUIRE(next);
  CHECK(next->payload == 9);
  CHECK(queue.in_flight() == 1);
}

TEST_CASE("slots and the queue stay consistent under threads", "[origin_queue]") {
  cache::ManualClock clock;
  OriginQueue<int> queue;
  const OriginLimits limits{4, 10000};  // room for every fetch: none is refused
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  std::atomic<int> done{0};
  // Each thread starts or queues fetches; whoever ends a fetch runs the one handed its slot.
  const auto work = [&](int base) {
    for (int i = 0; i < 500; ++i) {
      auto entered = queue.enter(base + i, clock.now(), limits);
      if (entered.entry != OriginEntry::started) continue;
      for (;;) {
        const int now = ++running;
        int seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
        --running;
        ++done;
        if (!queue.release(clock.now(), limits)) break;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(work, t * 1000);
  for (auto& t : threads) t.join();
  CHECK(peak.load() <= 4);
  CHECK(done.load() == 2000);  // every fetch ran: none was lost between queue and slot
  CHECK(queue.in_flight() == 0);
  CHECK(queue.depth() == 0);
}
