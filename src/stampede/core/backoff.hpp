// Exponential backoff of origin fetches per key after consecutive failures, so a failing origin
// sees one retry per key per backoff period instead of one per request.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cache/clock.hpp"
#include "cache/random.hpp"
#include "config/settings.hpp"

namespace corral::stampede {

struct BackoffPolicy {
  cache::Duration min{std::chrono::milliseconds(100)};
  cache::Duration max{std::chrono::seconds(30)};
  bool full_jitter = false;  // spread retries of keys that failed together

  static BackoffPolicy from(const config::PolicySettings& policy, bool full_jitter = true) {
    return {policy.backoff_min, policy.backoff_max, full_jitter};
  }
};

// Delay after `failures` consecutive failures (0: none): min * 2^(failures - 1), capped at max.
// With full_jitter, uniform in [min, that] instead; the floor at `min` keeps the origin's
// protection even on a low draw. `random` is used only with full_jitter.
cache::Duration backoff_delay(int failures, const BackoffPolicy& policy, cache::Random& random);

// Per-key failure counts and retry times. Thread-safe (one mutex; it is touched on the error
// path only, never on a hit). Bounded: when `max_keys` are tracked, keys whose retry time has
// passed are dropped, and if none has, a new key's failure is not tracked (it retries after
// `min` like a first failure) rather than growing without limit.
class BackoffTable {
 public:
  explicit BackoffTable(std::size_t max_keys = 100000) : max_keys_(max_keys) {}

  // True when the key may be fetched: never failed, or its retry time has come.
  bool allowed(std::string_view key, cache::TimePoint now) const;
  std::optional<cache::TimePoint> retry_at(std::string_view key) const;
  int failures(std::string_view key) const;
  // Counts one more consecutive failure and returns the time before which the key must not be
  // fetched again. A key quiet for longer than policy.max since its retry time starts over.
  cache::TimePoint record_failure(std::string_view key, cache::TimePoint now,
                                  const BackoffPolicy& policy, cache::Random& random);
  void record_success(std::string_view key);
  std::size_t size() const;

 private:
  struct State {
    int failures = 0;
    cache::TimePoint retry_at{};
  };
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  void drop_expired(cache::TimePoint now);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, State, KeyHash, std::equal_to<>> states_;
  const std::size_t max_keys_;
};

}  // namespace corral::stampede
