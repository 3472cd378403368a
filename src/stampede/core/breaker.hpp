// Per-policy circuit breaker: after repeated origin failures stop calling the origin for a
// while, then let exactly one probe through to decide whether to resume.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "cache/clock.hpp"
#include "config/settings.hpp"

namespace corral::stampede {

enum class BreakerState : std::uint8_t { closed, open, half_open };

constexpr std::string_view to_string(BreakerState state) {
  constexpr std::string_view kNames[] = {"closed", "open", "half_open"};
  return kNames[static_cast<int>(state)];
}

// How a call was let through (or not); hand it back with the call's result.
enum class Admission : std::uint8_t { allowed, probe, rejected };

// closed --(failure_threshold consecutive failures)--> open --(open_for elapsed, next admit)-->
// half_open: one probe --success--> closed, --failure--> open again.
// Only the probe's result moves a half-open breaker, and results of calls admitted before the
// breaker opened are ignored while it is open, so a late answer cannot close it by accident.
// A probe that never reports is presumed lost after open_for, and the next admit() is a new
// probe: the breaker cannot stay half-open forever. failure_threshold <= 0 disables it.
// Thread-safe: transitions under a mutex; state() is a lock-free read for metrics.
class CircuitBreaker {
 public:
  CircuitBreaker(int failure_threshold, cache::Duration open_for)
      : failure_threshold_(failure_threshold), open_for_(open_for) {}
  explicit CircuitBreaker(const config::PolicySettings& policy)
      : CircuitBreaker(policy.breaker_failures, policy.breaker_open) {}

  // Asks to call the origin now. `rejected` means: do not call it (serve stale or an error).
  Admission admit(cache::TimePoint now);
  void record_success(Admission admission);
  void record_failure(Admission admission, cache::TimePoint now);

  BreakerState state() const { return state_.load(std::memory_order_relaxed); }
  std::uint64_t times_opened() const { return times_opened_.load(std::memory_order_relaxed); }
  int consecutive_failures() const;

 private:
  void open(cache::TimePoint now);

  mutable std::mutex mutex_;
  const int failure_threshold_;
  const cache::Duration open_for_;
  int failures_ = 0;
  cache::TimePoint changed_at_{};  // when it opened, or when the current probe was let through
  std::atomic<BreakerState> state_{BreakerState::closed};
  std::atomic<std::uint64_t> times_opened_{0};
};

}  // namespace corral::stampede
