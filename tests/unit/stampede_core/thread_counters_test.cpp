// Per-thread counters: every increment from every thread is in the sum, also when more threads
// than slots share them.
#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "stampede/core/thread_counters.hpp"

using corral::stampede::ThreadCounters;

TEST_CASE("thread counters sum every thread's increments", "[thread_counters]") {
  ThreadCounters<3> counters;
  constexpr int kThreads = ThreadCounters<3>::kSlots + 4;  // some slots are shared
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counters, t] {
      for (int i = 0; i < kPerThread; ++i) counters.add(static_cast<std::size_t>(t % 2));
      counters.add(2, 5);
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(counters.sum(0) == std::uint64_t{kPerThread} * ((kThreads + 1) / 2));
  CHECK(counters.sum(1) == std::uint64_t{kPerThread} * (kThreads / 2));
  CHECK(counters.sum(2) == std::uint64_t{5} * kThreads);
}

TEST_CASE("thread counters start at zero and count one thread exactly", "[thread_counters]") {
  ThreadCounters<2> counters;
  CHECK(counters.sum(0) == 0);
  counters.add(1);
  counters.add(1, 41);
  CHECK(counters.sum(0) == 0);
  CHECK(counters.sum(1) == 42);
}
