// Process-wide protection state of one policy, shared by every io thread and kept across
// reloads: the in-flight fetches (singleflight), the circuit breaker, per-key backoff and the
// origin concurrency count.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/settings.hpp"
#include "stampede/core/backoff.hpp"
#include "stampede/core/breaker.hpp"
#include "stampede/core/flight_table.hpp"
#include "stampede/flight.hpp"
#include "stampede/versioned/version_state.hpp"

namespace corral::stampede {

class PolicyRuntime {
 public:
  explicit PolicyRuntime(const config::PolicySettings& policy);
  PolicyRuntime(const PolicyRuntime&) = delete;
  PolicyRuntime& operator=(const PolicyRuntime&) = delete;

  // A reload kept this policy: a new breaker if its thresholds changed (the old one finishes
  // with the fetches that hold it), everything else carries over.
  void update(const config::PolicySettings& policy);

  // Hold the returned breaker for the whole fetch: admission and result go to the same one.
  std::shared_ptr<CircuitBreaker> breaker() const;
  BackoffTable& backoff() { return backoff_; }
  FlightTable<Flight>& flights() { return flights_; }
  VersionState& versions() { return versions_; }

  // max_origin_concurrency: counts one origin fetch in; false (nothing counted) over `limit`.
  // limit <= 0 means no limit.
  bool try_begin_fetch(int limit);
  void end_fetch() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }
  int fetches_in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex mutex_;  // guards the breaker pointer only
  std::shared_ptr<CircuitBreaker> breaker_;
  int breaker_failures_;
  config::Duration breaker_open_;
  BackoffTable backoff_;
  FlightTable<Flight> flights_;
  std::atomic<int> in_flight_{0};
  VersionState versions_;
};

}  // namespace corral::stampede
