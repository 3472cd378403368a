// The proxy slowlog: requests slower than slowlog.threshold with their phases, in one bounded
// ring per io thread. A thread writes only its own ring (rarely: only slow requests get there);
// SLOWLOG GET / LEN / RESET read or clear them all.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "slowlog/phases.hpp"

namespace corral::slowlog {

struct SlowEntry {
  std::uint64_t id = 0;  // process-wide, increasing: the merge order across threads
  std::int64_t unix_seconds = 0;
  std::uint64_t duration_us = 0;
  std::vector<std::string> argv;  // as Redis shows it (see ArgvHead::redis_argv)
  std::string client_addr;
  std::string client_name;
  Phases phases;
};

// Upper bounds (seconds) of the per-phase histogram of slow requests; +Inf is implicit. Starts
// at 1 ms: nothing faster than the threshold's unit gets here.
inline constexpr std::array<double, 12> kPhaseBuckets = {0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                         0.025,  0.05,   0.1,   0.25,   0.5,   1.0};

// Counts of the phases of every request recorded, for /metrics: cumulative, never reset (SLOWLOG
// RESET empties the rings only, as a Prometheus counter must never go down).
struct PhaseHistograms {
  std::array<std::array<std::atomic<std::uint64_t>, kPhaseBuckets.size() + 1>, kPhaseCount>
      buckets{};
  std::array<std::atomic<std::uint64_t>, kPhaseCount> sum_us{};
  std::atomic<std::uint64_t> recorded{0};

  void observe(const Phases& phases);
};

class SlowLog {
 public:
  // `max_len`: entries kept per io thread (the oldest go first).
  SlowLog(std::size_t threads, std::size_t max_len);

  // Called by io thread `thread` only.
  void record(std::size_t thread, SlowEntry entry);
  // Up to `count` entries of all threads, newest first.
  std::vector<SlowEntry> newest(std::size_t count) const;
  std::size_t size() const;
  void reset();
  std::size_t max_len() const { return max_len_; }
  const PhaseHistograms& histograms() const { return histograms_; }

 private:
  struct Ring {
    mutable std::mutex mutex;
    std::deque<SlowEntry> entries;  // newest at the back
  };
  std::size_t max_len_;
  std::vector<std::unique_ptr<Ring>> rings_;
  std::atomic<std::uint64_t> next_id_{0};
  PhaseHistograms histograms_;
};

}  // namespace corral::slowlog
