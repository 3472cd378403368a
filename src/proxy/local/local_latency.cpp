// Per-thread counters registered once per thread; readers sum them under a lock that only
// LATENCY HISTOGRAM, CONFIG RESETSTAT and a thread's first record take.
#include "proxy/local/local_latency.hpp"

#include <algorithm>
#include <bit>

#include "proxy/commands/command_table.hpp"

namespace corral::proxy {

namespace {
std::atomic<std::uint64_t> next_instance{1};

constexpr std::int64_t kMaxNanos = 1'000'000'000;  // Redis's LATENCY_HISTOGRAM_MAX_VALUE

constexpr std::uint64_t bucket_bound_ns(std::size_t bucket) {
  return (std::uint64_t{1} << (10 + bucket)) + (std::uint64_t{1} << (3 + bucket)) - 1;
}
}  // namespace

LocalLatency::LocalLatency(std::size_t commands)
    : commands_(commands), instance_(next_instance.fetch_add(1, std::memory_order_relaxed)) {}

std::size_t LocalLatency::bucket_of(std::chrono::nanoseconds took) {
  const auto ns = static_cast<std::uint64_t>(std::clamp<std::int64_t>(took.count(), 1, kMaxNanos));
  const int width = std::bit_width(ns);
  std::size_t bucket = width > 11 ? static_cast<std::size_t>(width - 11) : 0;
  if (ns > bucket_bound_ns(bucket)) ++bucket;
  return std::min(bucket, kBuckets - 1);
}

std::int64_t LocalLatency::bucket_label_usec(std::size_t bucket) {
  return static_cast<std::int64_t>(bucket_bound_ns(bucket) / 1000);
}

LocalLatency::ThreadCounts& LocalLatency::mine() {
  // One slot per thread and instance: tests build instances of their own beside the process's.
  thread_local std::uint64_t owner = 0;
  thread_local ThreadCounts* counts = nullptr;
  if (owner != instance_) {
    std::lock_guard lock(mutex_);
    threads_.push_back(std::make_unique<ThreadCounts>(commands_ * kBuckets));
    owner = instance_;
    counts = threads_.back().get();
  }
  return *counts;
}

void LocalLatency::record(std::size_t command_id, std::chrono::nanoseconds took) {
  if (command_id >= commands_) return;  // a learned row: Corral answers none of those
  auto& slot = mine().counts[command_id * kBuckets + bucket_of(took)];
  slot.store(slot.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

LocalLatency::Buckets LocalLatency::counts(std::size_t command_id) const {
  Buckets sum{};
  if (command_id >= commands_) return sum;
  std::lock_guard lock(mutex_);
  for (const auto& thread : threads_) {
    for (std::size_t b = 0; b < kBuckets; ++b) {
      const std::size_t at = command_id * kBuckets + b;
      sum[b] += thread->counts[at].load(std::memory_order_relaxed) - thread->baseline[at];
    }
  }
  return sum;
}

LocalLatency::Baseline LocalLatency::snapshot() const {
  std::lock_guard lock(mutex_);
  Baseline baseline;
  for (const auto& thread : threads_) {
    auto& copy = baseline.emplace_back(thread->counts.size());
    for (std::size_t i = 0; i < copy.size(); ++i) {
      copy[i] = thread->counts[i].load(std::memory_order_relaxed);
    }
  }
  return baseline;
}

void LocalLatency::reset_to(const Baseline& baseline) {
  std::lock_guard lock(mutex_);
  // Threads registered after the snapshot had counted nothing before it.
  for (std::size_t t = 0; t < baseline.size() && t < threads_.size(); ++t) {
    std::copy(baseline[t].begin(), baseline[t].end(), threads_[t]->baseline.begin());
  }
}

LocalLatency& local_latency() {
  static auto* latency = new LocalLatency(all_commands().size());  // io threads may record at exit
  return *latency;
}

}  // namespace corral::proxy
