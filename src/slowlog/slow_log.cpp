// SlowLog: per-thread rings merged by id when read.
#include "slowlog/slow_log.hpp"

#include <algorithm>
#include <cassert>

namespace corral::slowlog {

void PhaseHistograms::observe(const Phases& phases) {
  recorded.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t phase = 0; phase < kPhaseCount; ++phase) {
    const std::uint32_t micros = phases.micros[phase];
    const double seconds = static_cast<double>(micros) / 1e6;
    const auto bound = std::lower_bound(kPhaseBuckets.begin(), kPhaseBuckets.end(), seconds);
    const auto bucket = static_cast<std::size_t>(bound - kPhaseBuckets.begin());
    buckets[phase][bucket].fetch_add(1, std::memory_order_relaxed);
    sum_us[phase].fetch_add(micros, std::memory_order_relaxed);
  }
}

SlowLog::SlowLog(std::size_t threads, std::size_t max_len, std::int64_t threshold_us)
    : max_len_(std::min(max_len, kMaxLenLimit)), threshold_us_(threshold_us) {
  for (std::size_t i = 0; i < threads; ++i) rings_.push_back(std::make_unique<Ring>());
}

void SlowLog::record(std::size_t thread, SlowEntry entry) {
  assert(thread < rings_.size());
  histograms_.observe(entry.phases);
  const std::size_t max_len = this->max_len();
  entry.id = next_id_.fetch_add(1, std::memory_order_relaxed);
  Ring& ring = *rings_[thread];
  const std::lock_guard lock(ring.mutex);
  ring.entries.push_back(std::move(entry));
  while (ring.entries.size() > max_len) ring.entries.pop_front();
}

void SlowLog::set_max_len(std::size_t max_len) {
  max_len = std::min(max_len, kMaxLenLimit);
  max_len_.store(max_len, std::memory_order_relaxed);
  for (const auto& ring : rings_) {
    const std::lock_guard lock(ring->mutex);
    while (ring->entries.size() > max_len) ring->entries.pop_front();
  }
}

std::vector<SlowEntry> SlowLog::newest(std::size_t count) const {
  count = std::min(count, max_len());
  std::vector<SlowEntry> all;
  for (const auto& ring : rings_) {
    const std::lock_guard lock(ring->mutex);
    const std::size_t take = std::min(count, ring->entries.size());
    all.insert(all.end(), ring->entries.end() - static_cast<std::ptrdiff_t>(take),
               ring->entries.end());
  }
  std::sort(all.begin(), all.end(),
            [](const SlowEntry& a, const SlowEntry& b) { return a.id > b.id; });
  if (all.size() > count) all.resize(count);
  return all;
}

std::size_t SlowLog::size() const {
  std::size_t total = 0;
  for (const auto& ring : rings_) {
    const std::lock_guard lock(ring->mutex);
    total += ring->entries.size();
  }
  return std::min(total, max_len());
}

void SlowLog::reset() {
  for (const auto& ring : rings_) {
    const std::lock_guard lock(ring->mutex);
    ring->entries.clear();
  }
}

}  // namespace corral::slowlog
