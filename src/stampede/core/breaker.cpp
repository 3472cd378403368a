// Circuit breaker transitions; see breaker.hpp for the state machine.
#include "stampede/core/breaker.hpp"

namespace corral::stampede {

Admission CircuitBreaker::admit(cache::TimePoint now) {
  std::lock_guard lock(mutex_);
  switch (state_.load(std::memory_order_relaxed)) {
    case BreakerState::closed:
      return Admission::allowed;
    case BreakerState::open:
    case BreakerState::half_open:
      // Open: the wait is over. Half-open: the probe is overdue, presumed lost.
      if (now - changed_at_ < open_for_) return Admission::rejected;
      state_.store(BreakerState::half_open, std::memory_order_relaxed);
      changed_at_ = now;
      return Admission::probe;
  }
  return Admission::rejected;
}

void CircuitBreaker::record_success(Admission admission) {
  std::lock_guard lock(mutex_);
  const BreakerState state = state_.load(std::memory_order_relaxed);
  if (state == BreakerState::closed) {
    failures_ = 0;
  } else if (state == BreakerState::half_open && admission == Admission::probe) {
    failures_ = 0;
    state_.store(BreakerState::closed, std::memory_order_relaxed);
  }
}

void CircuitBreaker::record_failure(Admission admission, cache::TimePoint now) {
  std::lock_guard lock(mutex_);
  const BreakerState state = state_.load(std::memory_order_relaxed);
  if (state == BreakerState::closed) {
    ++failures_;
    if (failure_threshold_ > 0 && failures_ >= failure_threshold_) open(now);
  } else if (state == BreakerState::half_open && admission == Admission::probe) {
    open(now);
  }
}

int CircuitBreaker::consecutive_failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

void CircuitBreaker::open(cache::TimePoint now) {
  state_.store(BreakerState::open, std::memory_order_relaxed);
  changed_at_ = now;
  times_opened_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace corral::stampede
