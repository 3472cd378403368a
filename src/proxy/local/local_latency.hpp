// The latency histograms of the commands Corral answers itself (PING, CLIENT ID, CLIENT LIST ...),
// in the buckets of Redis 7.0's LATENCY HISTOGRAM: those commands never reach Redis, which
// therefore cannot count them.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace corral::proxy {

class LocalLatency {
 public:
  // Redis reports hdr_histogram's log iteration from 1024 ns doubling: bucket k holds durations up
  // to 2^(10+k) + 2^(3+k) - 1 ns (the highest value equivalent to the level at 2 significant
  // digits), labelled with that bound in whole microseconds; durations are clamped to 1 s.
  static constexpr std::size_t kBuckets = 21;
  using Buckets = std::array<std::uint64_t, kBuckets>;
  // Counts of every command of the table, per io thread, as one flat array.
  using Baseline = std::vector<std::vector<std::uint64_t>>;

  explicit LocalLatency(std::size_t commands);

  // On the calling thread's own counters: a relaxed load and store, no lock, no shared line.
  void record(std::size_t command_id, std::chrono::nanoseconds took);
  // Calls per bucket (not cumulative) of one command, every thread's summed, since the last reset.
  Buckets counts(std::size_t command_id) const;
  // CONFIG RESETSTAT: the counts at the time it was sent (snapshot) become zero once Redis
  // accepts it (reset_to), so calls answered between the two are kept.
  Baseline snapshot() const;
  void reset_to(const Baseline& baseline);

  static std::size_t bucket_of(std::chrono::nanoseconds took);
  static std::int64_t bucket_label_usec(std::size_t bucket);

 private:
  struct ThreadCounts {
    explicit ThreadCounts(std::size_t size) : counts(size), baseline(size, 0) {}
    std::vector<std::atomic<std::uint64_t>> counts;  // written by its thread only
    std::vector<std::uint64_t> baseline;             // under mutex_
  };
  ThreadCounts& mine();

  const std::size_t commands_;
  const std::uint64_t instance_;  // never reused, unlike an address
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<ThreadCounts>> threads_;
};

// The process's histograms, sized for the built-in command table.
LocalLatency& local_latency();

}  // namespace corral::proxy
