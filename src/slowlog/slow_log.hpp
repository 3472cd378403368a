// The proxy slowlog: requests slower than slowlog.threshold with their phases, in one bounded
// ring per io thread. A thread writes only its own ring (rarely: only slow requests get there);
// SLOWLOG GET / LEN / RESET read or clear them all, and see the newest max_len of them, as
// Redis's one list. Threshold and length follow a CONFIG SET that the upstream accepted.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
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

// What CONFIG SET slowlog-max-len may ask of Corral: slowlog.max_len's own upper bound.
inline constexpr std::size_t kMaxLenLimit = 100000;

class SlowLog {
 public:
  // `max_len`: entries shown (the oldest go first); `threshold_us`: Redis's
  // slowlog-log-slower-than, microseconds (negative: nothing is recorded).
  SlowLog(std::size_t threads, std::size_t max_len, std::int64_t threshold_us);

  // Whether a request of this latency is recorded: one relaxed load.
  bool records(std::chrono::nanoseconds latency) const {
    const auto threshold = threshold_us_.load(std::memory_order_relaxed);
    return threshold >= 0 &&
           std::chrono::duration_cast<std::chrono::microseconds>(latency).count() >= threshold;
  }
  // Called by io thread `thread` only.
  void record(std::size_t thread, SlowEntry entry);
  // Up to `count` entries (at most max_len) of all threads, newest first.
  std::vector<SlowEntry> newest(std::size_t count) const;
  // Entries held, at most max_len.
  std::size_t size() const;
  void reset();
  std::size_t max_len() const { return max_len_.load(std::memory_order_relaxed); }
  std::int64_t threshold_us() const { return threshold_us_.load(std::memory_order_relaxed); }
  // CONFIG SET slowlog-max-len (capped at kMaxLenLimit) / slowlog-log-slower-than.
  void set_max_len(std::size_t max_len);
  void set_threshold_us(std::int64_t threshold_us) {
    threshold_us_.store(threshold_us, std::memory_order_relaxed);
  }
  const PhaseHistograms& histograms() const { return histograms_; }

 private:
  struct Ring {
    mutable std::mutex mutex;
    std::deque<SlowEntry> entries;  // newest at the back
  };
  // Each ring keeps max_len entries, so the newest max_len of all threads are always there.
  std::atomic<std::size_t> max_len_;
  std::atomic<std::int64_t> threshold_us_;
  std::vector<std::unique_ptr<Ring>> rings_;
  std::atomic<std::uint64_t> next_id_{0};
  PhaseHistograms histograms_;
};

}  // namespace corral::slowlog
