// What the Sentinel upstream reports to /readyz and /metrics: process-wide counters written by
// the watch (io thread 0) and by every thread's links, read at scrape time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace prometheus {
class Collectable;
}

namespace corral::upstream {

struct SentinelStatus {
  std::atomic<bool> primary_known{false};
  std::atomic<bool> holding{false};  // a failover was announced and the switch is not done
  std::atomic<int> sentinels_subscribed{0};
  std::atomic<std::uint64_t> primary_switches{0};
  std::atomic<std::uint64_t> held_commands{0};  // commands that waited for a failover
  std::atomic<std::uint64_t> hold_expired{0};   // of those, answered with an error
  std::atomic<std::uint64_t> session_links_closed{0};
  // With read_from: the replicas reads may go to, as the last poll found them.
  std::atomic<int> replicas_usable{0};

  void set_primary(std::string address) {
    std::lock_guard lock(mutex_);
    primary_ = std::move(address);
  }
  std::string primary() const {
    std::lock_guard lock(mutex_);
    return primary_;
  }

 private:
  mutable std::mutex mutex_;
  std::string primary_;  // "host:port", for the metric's label and /readyz's reason
};

// corral_sentinel_primary_known, corral_sentinel_primary{address},
// corral_sentinel_sentinels_subscribed, corral_sentinel_failover_holding,
// corral_sentinel_primary_switches_total, corral_sentinel_held_commands_total,
// corral_sentinel_hold_expired_total, corral_sentinel_session_links_closed_total,
// corral_sentinel_replicas_usable.
std::shared_ptr<prometheus::Collectable> make_sentinel_metrics(
    std::shared_ptr<const SentinelStatus> status);

}  // namespace corral::upstream
