// Concurrency smoke test: two threads hammer overlapping keys of a small store; the accounting
// must stay consistent and within budget (run under ASan/TSan builds for races).
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>

#include "cache/clock.hpp"
#include "cache/random.hpp"
#include "cache/store.hpp"

using namespace corral;
using namespace corral::cache;
using namespace std::chrono_literals;

TEST_CASE("two threads storing, looking up and invalidating keep the store consistent",
          "[store][concurrency]") {
  ManualClock clock;
  const std::uint64_t budget = 64 * 1024;
  Store store(config::CacheSettings{.max_memory = budget, .shards = 4});
  // Catch2 assertions are not thread-safe: workers record, the main thread checks after join.
  std::atomic<std::uint64_t> most_bytes{0};

  auto worker = [&](std::uint64_t seed) {
    SeededRandom random(seed);
    Entry out;
    for (int i = 0; i < 20000; ++i) {
      const int id = static_cast<int>(random.uniform() * 500);
      const std::string key = "key:" + std::to_string(id);
      const double action = random.uniform();
      if (action < 0.5) {
        store.lookup({key, "GET"}, clock.now(), out);
      } else if (action < 0.9) {
        const std::string value(static_cast<std::size_t>(id % 200), 'v');
        const std::uint64_t ticket = store.fill_ticket(key);
        store.store({key, id % 2 ? "GET" : "STRLEN"},
                    Entry::make(value, clock.now(), {1s, 1s, {}}, {}, false), ticket);
      } else if (action < 0.995) {
        store.invalidate(key);
      } else {
        store.invalidate_prefix("key:1");
      }
      if (i % 1000 == 0) clock.advance(100ms);
      const std::uint64_t bytes = store.bytes();
      std::uint64_t seen = most_bytes.load();
      while (bytes > seen && !most_bytes.compare_exchange_weak(seen, bytes)) {
      }
    }
  };
  std::thread other(worker, 1);
  worker(2);
  other.join();

  CHECK(most_bytes.load() <= budget);
  CHECK(most_bytes.load() > budget / 2);  // the budget was actually under pressure
  CHECK(store.bytes() <= budget);
  CHECK(store.entries() > 0);
  store.clear();
  CHECK(store.entries() == 0);
  CHECK(store.bytes() == 0);
}
