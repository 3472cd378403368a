// Flight payloads (waiter lists across threads) and per-policy protection state.
#include "stampede/policy_runtime.hpp"

#include <algorithm>

namespace corral::stampede {

bool Flight::add(const std::shared_ptr<FlightWaiter>& waiter) {
  std::lock_guard lock(mutex_);
  if (done_) return false;
  if (waiters_.size() >= compact_at_) {
    // Waiters that timed out stay listed until the flight ends; without this a fetch that
    // hangs until the origin's timeout would collect every request that ever timed out on it.
    std::erase_if(waiters_, [](const auto& w) { return w.expired(); });
    compact_at_ = std::max<std::size_t>(64, waiters_.size() * 2);
  }
  waiters_.push_back(waiter);
  return true;
}

void Flight::complete(FlightResult flight_result) {
  std::vector<std::weak_ptr<FlightWaiter>> waiters;
  {
    std::lock_guard lock(mutex_);
    if (done_) return;
    result = std::move(flight_result);
    done_ = true;
    waiters.swap(waiters_);
  }
  // Not under the lock: waiters post to their threads, which may join other flights meanwhile.
  // The shared_ptr to this flight keeps `result` alive for them.
  const std::shared_ptr<Flight> self = shared_from_this();
  for (const auto& weak : waiters) {
    if (auto waiter = weak.lock()) {
      FlightWaiter* raw = waiter.get();
      raw->flight_done(std::move(waiter), self);
    }
  }
}

PolicyRuntime::PolicyRuntime(const config::PolicySettings& policy)
    : breaker_(std::make_shared<CircuitBreaker>(policy)),
      breaker_failures_(policy.breaker_failures),
      breaker_open_(policy.breaker_open) {}

void PolicyRuntime::update(const config::PolicySettings& policy) {
  std::lock_guard lock(mutex_);
  if (policy.breaker_failures == breaker_failures_ && policy.breaker_open == breaker_open_) return;
  breaker_ = std::make_shared<CircuitBreaker>(policy);
  breaker_failures_ = policy.breaker_failures;
  breaker_open_ = policy.breaker_open;
}

std::shared_ptr<CircuitBreaker> PolicyRuntime::breaker() const {
  std::lock_guard lock(mutex_);
  return breaker_;
}

bool PolicyRuntime::try_begin_fetch(int limit) {
  const int now_in_flight = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (limit <= 0 || now_in_flight <= limit) return true;
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

}  // namespace corral::stampede
