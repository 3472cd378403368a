// Process-wide protection state of one policy, shared by every io thread and kept across
// reloads: the in-flight fetches (singleflight), the circuit breaker, per-key backoff and the
// origin's admission (concurrency count and queue).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/settings.hpp"
#include "stampede/core/backoff.hpp"
#include "stampede/core/breaker.hpp"
#include "stampede/core/flight_table.hpp"
#include "stampede/core/origin_queue.hpp"
#include "stampede/read/flight.hpp"
#include "stampede/versioned/version_state.hpp"

namespace corral::stampede {

class Fetch;
// Weak: a queued fetch is owned by its queue timer on its own io thread, so a queue kept across
// reloads never keeps one (and its timer) alive past its io_context.
using FetchQueue = OriginQueue<std::weak_ptr<Fetch>>;

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

  // max_origin_concurrency and max_origin_queue: every origin fetch of the policy enters here.
  FetchQueue& origin_queue() { return origin_queue_; }
  int fetches_in_flight() const { return origin_queue_.in_flight(); }
  std::size_t fetches_queued() const { return origin_queue_.depth(); }

 private:
  mutable std::mutex mutex_;  // guards the breaker pointer only
  std::shared_ptr<CircuitBreaker> breaker_;
  int breaker_failures_;
  config::Duration breaker_open_;
  BackoffTable backoff_;
  FlightTable<Flight> flights_;
  FetchQueue origin_queue_;
  VersionState versions_;
};

}  // namespace corral::stampede
