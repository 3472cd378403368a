// Per-policy counters of the caching layer: relaxed atomics written by every io thread on the
// data path, read by the /metrics collector and by the CORRAL.STATS / CORRAL.INFO admin commands.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "stampede/core/thread_counters.hpp"

namespace corral::stampede {

enum class LookupOutcome : std::uint8_t { hit, stale, miss, coalesced, negative };
inline constexpr std::size_t kLookupOutcomes = 5;
std::string_view to_string(LookupOutcome outcome);

enum class InvalidationSource : std::uint8_t { write, tracking, admin, flush };
inline constexpr std::size_t kInvalidationSources = 4;
std::string_view to_string(InvalidationSource source);

// Why a copy past its ttl was served: within `grace` (a refresh is on its way), or within
// `stale_if_error` past grace (the origin failed, is backed off or its breaker is open, or the
// waiters' queue or wait_timeout gave up): the second one means the origin is not answering.
enum class StaleReason : std::uint8_t { grace, stale_if_error };
inline constexpr std::size_t kStaleReasons = 2;
std::string_view to_string(StaleReason reason);

// A conditional request to an HTTP origin (the stored copy had an ETag or Last-Modified): 304
// renewed the copy, or the origin sent a new body.
enum class RevalidationResult : std::uint8_t { not_modified, modified };
inline constexpr std::size_t kRevalidationResults = 2;
std::string_view to_string(RevalidationResult result);

// Why the origin queue turned a fetch away (on_overflow answers its waiters): the queue was at
// max_origin_queue, or the fetch waited origin_queue_timeout for a slot.
enum class QueueRejection : std::uint8_t { full, timeout };
inline constexpr std::size_t kQueueRejections = 2;
std::string_view to_string(QueueRejection reason);

// Reads of a versioned policy by the version they were resolved to, in a few slots (version
// modulo kVersionSlots) so the label set stays bounded: the current version and the ones just
// before it. A slot taken over by a newer version starts again from zero.
inline constexpr std::size_t kVersionSlots = 4;
struct VersionReads {
  std::uint64_t version = 0;  // 0: slot never used
  std::uint64_t reads = 0;
};

// A fixed-bucket histogram of durations; lock-free, so observing costs a few relaxed adds.
class DurationHistogram {
 public:
  static constexpr std::array<double, 14> kBounds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0};
  struct Snapshot {
    std::array<std::uint64_t, kBounds.size() + 1> buckets{};  // per bucket, last one is +Inf
    std::uint64_t count = 0;
    double sum_seconds = 0;
  };

  void observe(std::chrono::nanoseconds duration);
  Snapshot snapshot() const;

 private:
  std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<std::uint64_t> sum_ns_{0};
};

// Plain values for admin commands (breaker state and concurrency come from the PolicyRuntime).
struct PolicyStatsSnapshot {
  std::string prefix;
  std::array<std::uint64_t, kLookupOutcomes> lookups{};  // indexed by LookupOutcome
  std::uint64_t early_refreshes = 0;
  std::uint64_t background_refreshes = 0;
  std::uint64_t origin_requests = 0;
  std::uint64_t origin_errors = 0;
  std::uint64_t stampede_blocked = 0;
  std::uint64_t waiters_overflowed = 0;
  std::uint64_t waiters_timed_out = 0;
  std::uint64_t locks_acquired = 0;     // fleet mode: refresh locks this process won
  std::uint64_t locks_contended = 0;    // fleet mode: refresh locks another process held
  std::uint64_t writes_fenced = 0;      // fleet mode: late writes refused (lock lost meanwhile)
  std::uint64_t version_fallbacks = 0;  // versioned: nil in the current version, previous served
  std::array<std::uint64_t, kQueueRejections> queue_rejections{};   // by QueueRejection
  std::array<std::uint64_t, kInvalidationSources> invalidations{};  // by InvalidationSource
  int breaker_state = 0;                                            // 0 closed, 1 open, 2 half-open
  int origin_in_flight = 0;
  std::size_t origin_queued = 0;  // fetches waiting for a slot of max_origin_concurrency

  std::uint64_t lookup(LookupOutcome outcome) const {
    return lookups[static_cast<std::size_t>(outcome)];
  }
  std::uint64_t invalidation(InvalidationSource source) const {
    return invalidations[static_cast<std::size_t>(source)];
  }
};

// Thread-safe; every counter is a relaxed atomic (exact when quiet, approximate while busy).
class PolicyStats {
 public:
  explicit PolicyStats(std::string prefix) : prefix_(std::move(prefix)) {}
  PolicyStats(const PolicyStats&) = delete;
  PolicyStats& operator=(const PolicyStats&) = delete;

  const std::string& prefix() const { return prefix_; }

  void lookup(LookupOutcome outcome) { lookups_.add(static_cast<std::size_t>(outcome)); }
  void early_refresh() { add(early_refreshes_); }
  void background_refresh() { add(background_refreshes_); }
  void background_refresh_done(std::chrono::nanoseconds d) { background_durations_.observe(d); }
  void origin_request(std::chrono::nanoseconds d, bool failed);
  void stampede_blocked() { add(stampede_blocked_); }
  void waiter_overflowed() { add(waiters_overflowed_); }
  void waiter_timed_out() { add(waiters_timed_out_); }
  void lock_acquired() { add(locks_acquired_); }
  void lock_contended() { add(locks_contended_); }
  void write_fenced() { add(writes_fenced_); }
  void version_fallback() { add(version_fallbacks_); }
  // A fetch that waited in the origin queue got its slot after `waited`.
  void queue_wait(std::chrono::nanoseconds waited) { queue_waits_.observe(waited); }
  void queue_rejected(QueueRejection reason) {
    add(queue_rejections_[static_cast<std::size_t>(reason)]);
  }
  void stale_serve(StaleReason reason) { stale_serves_.add(static_cast<std::size_t>(reason)); }
  void version_read(std::uint64_t version);
  void revalidation(RevalidationResult result) {
    add(revalidations_[static_cast<std::size_t>(result)]);
  }
  std::array<std::uint64_t, kRevalidationResults> revalidations() const;
  void invalidation(InvalidationSource source, std::uint64_t n = 1) {
    add(invalidations_[static_cast<std::size_t>(source)], n);
  }

  PolicyStatsSnapshot snapshot() const;
  std::array<std::uint64_t, kStaleReasons> stale_serves() const;
  std::array<VersionReads, kVersionSlots> version_reads() const;
  DurationHistogram::Snapshot origin_durations() const { return origin_durations_.snapshot(); }
  DurationHistogram::Snapshot background_durations() const {
    return background_durations_.snapshot();
  }
  DurationHistogram::Snapshot queue_waits() const { return queue_waits_.snapshot(); }

 private:
  static void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }

  const std::string prefix_;
  // Bumped on every cached read: per thread (see thread_counters.hpp).
  ThreadCounters<kLookupOutcomes> lookups_;
  std::atomic<std::uint64_t> early_refreshes_{0};
  std::atomic<std::uint64_t> background_refreshes_{0};
  std::atomic<std::uint64_t> origin_requests_{0};
  std::atomic<std::uint64_t> origin_errors_{0};
  std::atomic<std::uint64_t> stampede_blocked_{0};
  std::atomic<std::uint64_t> waiters_overflowed_{0};
  std::atomic<std::uint64_t> waiters_timed_out_{0};
  std::atomic<std::uint64_t> locks_acquired_{0};
  std::atomic<std::uint64_t> locks_contended_{0};
  std::atomic<std::uint64_t> writes_fenced_{0};
  std::atomic<std::uint64_t> version_fallbacks_{0};
  std::array<std::atomic<std::uint64_t>, kInvalidationSources> invalidations_{};
  ThreadCounters<kStaleReasons> stale_serves_;
  std::array<std::atomic<std::uint64_t>, kRevalidationResults> revalidations_{};
  struct VersionSlot {
    std::atomic<std::uint64_t> version{0};
    std::atomic<std::uint64_t> reads{0};
  };
  std::array<VersionSlot, kVersionSlots> version_slots_{};
  DurationHistogram origin_durations_;
  DurationHistogram background_durations_;
  std::array<std::atomic<std::uint64_t>, kQueueRejections> queue_rejections_{};
  DurationHistogram queue_waits_;
};

}  // namespace corral::stampede
