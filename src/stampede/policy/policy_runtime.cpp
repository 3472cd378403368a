// Per-policy protection state: breaker swaps on reload.
#include "stampede/policy/policy_runtime.hpp"

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

}  // namespace corral::stampede
