// What the Sentinel upstream reports to /readyz and /metrics: process-wide counters written by
// the watch (io thread 0) and by every thread's links, read at scrape time.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace prometheus {
class Collectable;
}

namespace corral::upstream {

// Where a client's read went with read_from set, and why.
enum class ReadRoute : std::uint8_t {
  replica,                    // a usable replica
  primary_own_writes,         // the primary: the client's own writes are not on a replica yet
  primary_no_usable_replica,  // the primary: prefer_replica and no replica usable
  refused_no_usable_replica,  // answered with an error: read_from replica and none usable
};
inline constexpr std::size_t kReadRoutes = 4;

// One io thread's counts of ReadRoute: written by that thread only (relaxed load and store), on
// a cache line of its own, summed when scraped.
struct alignas(64) ReadRouteCounts {
  std::array<std::atomic<std::uint64_t>, kReadRoutes> reads{};
  void count(ReadRoute route) {
    auto& cell = reads[static_cast<std::size_t>(route)];
    cell.store(cell.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

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

  // Each replica's lag behind the primary in bytes of replication offset, by "host:port", as the
  // last poll found it (replicas whose link is down or whose offset is unknown are left out).
  void set_replica_lags(std::vector<std::pair<std::string, std::uint64_t>> lags) {
    std::lock_guard lock(mutex_);
    replica_lags_ = std::move(lags);
  }
  std::vector<std::pair<std::string, std::uint64_t>> replica_lags() const {
    std::lock_guard lock(mutex_);
    return replica_lags_;
  }

  // A new io thread's read counts; kept here after the thread lets go, so totals only grow.
  std::shared_ptr<ReadRouteCounts> add_read_counts() {
    std::lock_guard lock(mutex_);
    return read_counts_.emplace_back(std::make_shared<ReadRouteCounts>());
  }
  std::array<std::uint64_t, kReadRoutes> reads() const {
    std::array<std::uint64_t, kReadRoutes> sum{};
    std::lock_guard lock(mutex_);
    for (const auto& counts : read_counts_) {
      for (std::size_t i = 0; i < kReadRoutes; ++i) sum[i] += counts->reads[i].load();
    }
    return sum;
  }

 private:
  mutable std::mutex mutex_;
  std::string primary_;  // "host:port", for the metric's label and /readyz's reason
  std::vector<std::pair<std::string, std::uint64_t>> replica_lags_;
  std::vector<std::shared_ptr<ReadRouteCounts>> read_counts_;
};

// corral_sentinel_primary_known, corral_sentinel_primary{address},
// corral_sentinel_sentinels_subscribed, corral_sentinel_failover_holding,
// corral_sentinel_primary_switches_total, corral_sentinel_held_commands_total,
// corral_sentinel_hold_expired_total, corral_sentinel_session_links_closed_total,
// corral_sentinel_replicas_usable, corral_sentinel_replica_lag_bytes{address},
// corral_sentinel_reads_total{role,reason}.
std::shared_ptr<prometheus::Collectable> make_sentinel_metrics(
    std::shared_ptr<const SentinelStatus> status);

}  // namespace corral::upstream
