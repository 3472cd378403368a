// Per-policy protection state: breaker swaps on reload and the origin concurrency count.
#include "stampede/policy_runtime.hpp"

namespace corral::stampede {

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
