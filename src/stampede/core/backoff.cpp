// Exponential per-key backoff; see backoff.hpp.
#include "stampede/core/backoff.hpp"

#include <algorithm>

namespace corral::stampede {

cache::Duration backoff_delay(int failures, const BackoffPolicy& policy, cache::Random& random) {
  if (failures <= 0) return cache::Duration::zero();
  const cache::Duration floor = std::max(policy.min, cache::Duration::zero());
  const cache::Duration cap = std::max(policy.max, floor);
  cache::Duration delay = floor;
  // Doubling step by step cannot overflow: it stops as soon as the cap is reached.
  for (int i = 1; i < failures && delay < cap; ++i) delay = delay * 2;
  delay = std::min(delay, cap);
  if (policy.full_jitter && delay > floor) {
    const double spread = static_cast<double>((delay - floor).count()) * random.uniform();
    delay = floor + cache::Duration(static_cast<cache::Duration::rep>(spread));
  }
  return delay;
}

bool BackoffTable::allowed(std::string_view key, cache::TimePoint now) const {
  std::lock_guard lock(mutex_);
  const auto found = states_.find(key);
  return found == states_.end() || now >= found->second.retry_at;
}

std::optional<cache::TimePoint> BackoffTable::retry_at(std::string_view key) const {
  std::lock_guard lock(mutex_);
  const auto found = states_.find(key);
  if (found == states_.end()) return std::nullopt;
  return found->second.retry_at;
}

int BackoffTable::failures(std::string_view key) const {
  std::lock_guard lock(mutex_);
  const auto found = states_.find(key);
  return found == states_.end() ? 0 : found->second.failures;
}

cache::TimePoint BackoffTable::record_failure(std::string_view key, cache::TimePoint now,
                                              const BackoffPolicy& policy, cache::Random& random) {
  std::lock_guard lock(mutex_);
  auto found = states_.find(key);
  if (found == states_.end()) {
    if (states_.size() >= max_keys_) drop_expired(now);
    if (states_.size() >= max_keys_) return now + backoff_delay(1, policy, random);
    found = states_.emplace(std::string(key), State{}).first;
  }
  State& state = found->second;
  if (state.failures > 0 && now >= state.retry_at + policy.max) state.failures = 0;
  if (state.failures < 1000) ++state.failures;  // far past any cap; keeps the counter bounded
  state.retry_at = now + backoff_delay(state.failures, policy, random);
  return state.retry_at;
}

void BackoffTable::record_success(std::string_view key) {
  std::lock_guard lock(mutex_);
  const auto found = states_.find(key);
  if (found != states_.end()) states_.erase(found);
}

std::size_t BackoffTable::size() const {
  std::lock_guard lock(mutex_);
  return states_.size();
}

void BackoffTable::drop_expired(cache::TimePoint now) {
  std::erase_if(states_, [now](const auto& item) { return now >= item.second.retry_at; });
}

}  // namespace corral::stampede
