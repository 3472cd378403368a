// HotKeys: per-thread sketches behind a per-thread mutex (taken by that thread on sampled
// requests only, and by roll() once per window), merged into a report at each roll.
#include "stampede/core/hot_keys.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace corral::stampede {

struct HotKeys::ThreadSketches {
  explicit ThreadSketches(const HotKeyOptions& options)
      : sketches{SpaceSaving(options.capacity, options.max_key_bytes),
                 SpaceSaving(options.capacity, options.max_key_bytes)} {}

  std::mutex mutex;
  std::array<SpaceSaving, kHotKeyKinds> sketches;
  std::array<std::atomic<std::uint64_t>, kHotKeyKinds> sampled{};
};

HotKeys::HotKeys(std::size_t threads, HotKeyOptions options) : options_(options) {
  for (std::size_t i = 0; i < threads; ++i) {
    threads_.push_back(std::make_unique<ThreadSketches>(options_));
  }
}

HotKeys::~HotKeys() = default;

void HotKeys::count(std::size_t thread, HotKeyKind kind, std::string_view key) {
  auto& mine = *threads_[thread];
  const auto k = static_cast<std::size_t>(kind);
  // One writer per counter: a relaxed load and store, no locked increment.
  mine.sampled[k].store(mine.sampled[k].load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  const std::lock_guard lock(mine.mutex);
  mine.sketches[k].add(key);
}

std::vector<SpaceSaving::Counter> merge_sketches(const std::vector<const SpaceSaving*>& sketches,
                                                 std::size_t capacity) {
  std::unordered_map<std::string_view, SpaceSaving::Counter> merged;
  for (const SpaceSaving* sketch : sketches) {
    for (const auto& counter : sketch->counters()) {
      auto& into = merged[counter.key];
      into.count += counter.count;
      into.error += counter.error;
    }
  }
  // Each sketch where a key is absent adds its floor (what the key may have had there).
  for (auto& [key, counter] : merged) {
    for (const SpaceSaving* sketch : sketches) {
      const auto floor = sketch->floor();
      if (floor != 0 && !sketch->holds(key)) {
        counter.count += floor;
        counter.error += floor;
      }
    }
  }
  std::vector<SpaceSaving::Counter> out;
  out.reserve(merged.size());
  for (auto& [key, counter] : merged)
    out.push_back({std::string(key), counter.count, counter.error});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.count != b.count ? a.count > b.count : a.key < b.key;
  });
  if (out.size() > capacity) out.resize(capacity);
  return out;
}

void HotKeys::roll(std::chrono::nanoseconds elapsed) {
  std::vector<HotKey> report;
  const double seconds = std::max(1e-9, std::chrono::duration<double>(elapsed).count());
  const double scale = static_cast<double>(std::max<std::uint32_t>(1, options_.sample));
  for (std::size_t kind = 0; kind < kHotKeyKinds; ++kind) {
    // The window's sketches are swapped out for empty ones, built outside the locks.
    std::vector<SpaceSaving> closed;
    closed.reserve(threads_.size());
    for (auto& thread : threads_) {
      SpaceSaving fresh(options_.capacity, options_.max_key_bytes);
      const std::lock_guard lock(thread->mutex);
      std::swap(fresh, thread->sketches[kind]);
      closed.push_back(std::move(fresh));
    }
    std::vector<const SpaceSaving*> views;
    for (const auto& sketch : closed) views.push_back(&sketch);
    for (auto& counter : merge_sketches(views, options_.capacity)) {
      HotKey hot;
      hot.key = std::move(counter.key);
      hot.kind = static_cast<HotKeyKind>(kind);
      hot.sampled = counter.count;
      hot.sketch_error = counter.error;
      hot.rate = static_cast<double>(counter.count) * scale / seconds;
      const double spread = scale > 1 ? 2 * std::sqrt(static_cast<double>(counter.count)) : 0.0;
      hot.rate_error = (static_cast<double>(counter.error) + spread) * scale / seconds;
      report.push_back(std::move(hot));
    }
  }
  std::stable_sort(report.begin(), report.end(),
                   [](const HotKey& a, const HotKey& b) { return a.rate > b.rate; });
  const std::lock_guard lock(report_mutex_);
  report_ = std::move(report);
  window_ = elapsed;
}

std::vector<HotKey> HotKeys::top(std::size_t count, std::optional<HotKeyKind> kind) const {
  std::vector<HotKey> out;
  const std::lock_guard lock(report_mutex_);
  for (const auto& hot : report_) {
    if (out.size() == count) break;
    if (!kind || hot.kind == *kind) out.push_back(hot);
  }
  return out;
}

std::uint64_t HotKeys::sampled_total(HotKeyKind kind) const {
  std::uint64_t total = 0;
  for (const auto& thread : threads_) {
    total += thread->sampled[static_cast<std::size_t>(kind)].load(std::memory_order_relaxed);
  }
  return total;
}

std::chrono::nanoseconds HotKeys::last_window() const {
  const std::lock_guard lock(report_mutex_);
  return window_;
}

}  // namespace corral::stampede
