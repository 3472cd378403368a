// Per-policy counters and the lock-free duration histogram.
#include "stampede/policy/policy_stats.hpp"

#include <algorithm>

namespace corral::stampede {

namespace {
// Bucket bounds in whole nanoseconds, so placing a sample is an integer comparison.
constexpr auto kBoundsNs = [] {
  std::array<std::uint64_t, DurationHistogram::kBounds.size()> ns{};
  for (std::size_t i = 0; i < ns.size(); ++i) {
    ns[i] = static_cast<std::uint64_t>(DurationHistogram::kBounds[i] * 1e9 + 0.5);
  }
  return ns;
}();

std::uint64_t load(const std::atomic<std::uint64_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}
}  // namespace

std::string_view to_string(LookupOutcome outcome) {
  constexpr std::string_view kNames[] = {"hit", "stale", "miss", "coalesced", "negative"};
  return kNames[static_cast<std::size_t>(outcome)];
}

std::string_view to_string(InvalidationSource source) {
  constexpr std::string_view kNames[] = {"write", "tracking", "admin", "flush"};
  return kNames[static_cast<std::size_t>(source)];
}

std::string_view to_string(StaleReason reason) {
  constexpr std::string_view kNames[] = {"grace", "stale_if_error"};
  return kNames[static_cast<std::size_t>(reason)];
}

std::string_view to_string(QueueRejection reason) {
  return reason == QueueRejection::full ? "full" : "timeout";
}

void PolicyStats::version_read(std::uint64_t version) {
  auto& slot = version_slots_[version % kVersionSlots];
  auto seen = slot.version.load(std::memory_order_relaxed);
  if (seen != version) {
    // The first read of a version in this slot restarts its count; two threads doing so at
    // once lose at most a few reads, once per rollover.
    if (slot.version.compare_exchange_strong(seen, version, std::memory_order_relaxed)) {
      slot.reads.store(0, std::memory_order_relaxed);
    } else if (seen != version) {
      return;  // another version took the slot meanwhile
    }
  }
  add(slot.reads);
}

std::array<std::uint64_t, kStaleReasons> PolicyStats::stale_serves() const {
  std::array<std::uint64_t, kStaleReasons> out{};
  for (std::size_t i = 0; i < kStaleReasons; ++i) out[i] = stale_serves_.sum(i);
  return out;
}

std::array<VersionReads, kVersionSlots> PolicyStats::version_reads() const {
  std::array<VersionReads, kVersionSlots> out{};
  for (std::size_t i = 0; i < kVersionSlots; ++i) {
    out[i] = {load(version_slots_[i].version), load(version_slots_[i].reads)};
  }
  return out;
}

void DurationHistogram::observe(std::chrono::nanoseconds duration) {
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, duration.count()));
  std::size_t i = 0;
  while (i < kBoundsNs.size() && ns > kBoundsNs[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
}

DurationHistogram::Snapshot DurationHistogram::snapshot() const {
  Snapshot out;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    out.buckets[i] = load(buckets_[i]);
    out.count += out.buckets[i];
  }
  out.sum_seconds = static_cast<double>(load(sum_ns_)) / 1e9;
  return out;
}

std::string_view to_string(RevalidationResult result) {
  return result == RevalidationResult::not_modified ? "not_modified" : "modified";
}

std::array<std::uint64_t, kRevalidationResults> PolicyStats::revalidations() const {
  std::array<std::uint64_t, kRevalidationResults> out{};
  for (std::size_t i = 0; i < kRevalidationResults; ++i) out[i] = load(revalidations_[i]);
  return out;
}

void PolicyStats::origin_request(std::chrono::nanoseconds d, bool failed) {
  add(origin_requests_);
  if (failed) add(origin_errors_);
  origin_durations_.observe(d);
}

PolicyStatsSnapshot PolicyStats::snapshot() const {
  PolicyStatsSnapshot out;
  out.prefix = prefix_;
  for (std::size_t i = 0; i < kLookupOutcomes; ++i) out.lookups[i] = lookups_.sum(i);
  out.early_refreshes = load(early_refreshes_);
  out.background_refreshes = load(background_refreshes_);
  out.origin_requests = load(origin_requests_);
  out.origin_errors = load(origin_errors_);
  out.stampede_blocked = load(stampede_blocked_);
  out.waiters_overflowed = load(waiters_overflowed_);
  out.waiters_timed_out = load(waiters_timed_out_);
  out.locks_acquired = load(locks_acquired_);
  out.locks_contended = load(locks_contended_);
  out.writes_fenced = load(writes_fenced_);
  out.version_fallbacks = load(version_fallbacks_);
  for (std::size_t i = 0; i < kInvalidationSources; ++i) {
    out.invalidations[i] = load(invalidations_[i]);
  }
  for (std::size_t i = 0; i < kQueueRejections; ++i) {
    out.queue_rejections[i] = load(queue_rejections_[i]);
  }
  return out;
}

}  // namespace corral::stampede
