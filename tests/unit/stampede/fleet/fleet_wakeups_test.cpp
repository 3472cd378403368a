// FleetWakeups: a tracking message wakes the waiters of its key only, a Watch unregisters when it
// goes, and notify_all reaches everyone (tracking re-established, FLUSHALL).
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "stampede/fleet/fleet_wakeups.hpp"

using corral::stampede::FleetWakeups;

TEST_CASE("a key's invalidation wakes that key's waiters only", "[fleet_wakeups]") {
  FleetWakeups wakeups;
  int a = 0, b = 0;
  {
    FleetWakeups::Watch first(wakeups, "feat:a", [&] { ++a; });
    FleetWakeups::Watch second(wakeups, "feat:a", [&] { ++a; });
    FleetWakeups::Watch other(wakeups, "feat:b", [&] { ++b; });
    CHECK(wakeups.watching() == 3);
    wakeups.notify("feat:a");
    CHECK(a == 2);
    CHECK(b == 0);
    wakeups.notify("feat:c");
    CHECK(a == 2);
    wakeups.notify_all();
    CHECK(a == 4);
    CHECK(b == 1);
  }
  CHECK(wakeups.watching() == 0);
  wakeups.notify("feat:a");
  wakeups.notify_all();
  CHECK(a == 4);
  CHECK(b == 1);
}

TEST_CASE("a watch that goes unregisters only itself", "[fleet_wakeups]") {
  FleetWakeups wakeups;
  int kept = 0, gone = 0;
  FleetWakeups::Watch keep(wakeups, "k", [&] { ++kept; });
  {
    FleetWakeups::Watch leave(wakeups, "k", [&] { ++gone; });
  }
  wakeups.notify("k");
  CHECK(kept == 1);
  CHECK(gone == 0);
}

TEST_CASE("waiters register and are notified from several threads", "[fleet_wakeups]") {
  FleetWakeups wakeups;
  std::atomic<int> woken{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        FleetWakeups::Watch watch(wakeups, "hot", [&] { woken.fetch_add(1); });
        wakeups.notify("hot");
      }
    });
  }
  while (woken.load() < 1000) std::this_thread::yield();
  stop = true;
  for (auto& thread : threads) thread.join();
  CHECK(wakeups.watching() == 0);
}

TEST_CASE("live follows the tracking connection", "[fleet_wakeups]") {
  FleetWakeups wakeups;
  CHECK_FALSE(wakeups.live());
  wakeups.source_added();
  CHECK_FALSE(wakeups.live());
  wakeups.source_live(true);
  CHECK(wakeups.live());
  wakeups.source_live(false);
  CHECK_FALSE(wakeups.live());
}

// A cluster runs one tracking connection per primary: a key's invalidation comes only from its
// own primary's, so one live listener does not make the others' keys live.
TEST_CASE("live needs every primary's tracking connection", "[fleet_wakeups]") {
  FleetWakeups wakeups;
  for (int i = 0; i < 3; ++i) wakeups.source_added();
  wakeups.source_live(true);
  wakeups.source_live(true);
  CHECK_FALSE(wakeups.live());
  wakeups.source_live(true);
  CHECK(wakeups.live());
  wakeups.source_live(false);  // one primary's connection dropped
  CHECK_FALSE(wakeups.live());
  wakeups.source_removed();  // ... and that primary left the map (its listener stopped)
  CHECK(wakeups.live());
}
