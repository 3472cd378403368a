// The cluster's topology for the whole process: it asks any reachable node for the slot map
// (CLUSTER SHARDS, else CLUSTER SLOTS) and publishes it immutable; io threads pick it up by
// version. One refresh in flight, at most one a second; periodic and on events (MOVED, a lost
// connection, CLUSTERDOWN). With read_from set, its nodes' replication offsets too.
#pragma once

#include <utility>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/settings.hpp"
#include "upstream/cluster/node_gauges.hpp"
#include "upstream/cluster/slot_map.hpp"
#include "upstream/replica_view.hpp"

namespace corral::upstream {

class ClusterReplicaPoller;

enum class RefreshReason : std::uint8_t { startup, periodic, moved, connection, clusterdown };
inline constexpr std::size_t kRefreshReasons = 5;
std::string_view refresh_reason_name(RefreshReason reason);

enum class RedirectKind : std::uint8_t { moved, ask, tryagain };
inline constexpr std::size_t kRedirectKinds = 3;

// Process-wide cluster counters, read by the metrics endpoint and CORRAL.CLUSTER.
struct ClusterCounters {
  std::array<std::atomic<std::uint64_t>, kRedirectKinds> redirects{};
  std::atomic<std::uint64_t> crossslot_refused{0};
  std::atomic<std::uint64_t> refresh_failures{0};
  std::atomic<std::uint64_t> refreshes{0};  // every reason
  // Client requests waiting for their slot's primary (cluster_hold.hpp): now, ever, and those
  // answered with an error because their hold ran out or failover_hold_max were waiting.
  std::atomic<std::int64_t> requests_held{0};
  std::atomic<std::uint64_t> holds{0};
  std::atomic<std::uint64_t> holds_expired{0};
  std::atomic<std::uint64_t> holds_refused{0};
  // Writes in flight on a connection that died or timed out: they may have run, so they are
  // answered with the error instead of being sent again.
  std::atomic<std::uint64_t> unknown_fate_writes{0};

  void redirected(RedirectKind kind) {
    redirects[static_cast<std::size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  }
};

class Topology : public std::enable_shared_from_this<Topology> {
 public:
  // The refresh conversation runs on `executor` (one io thread).
  Topology(const boost::asio::any_io_executor& executor, const config::UpstreamSettings& settings);
  ~Topology();

  // First refresh now, then every topology_refresh. Call on the executor's thread.
  void start();
  void stop();

  // Thread-safe. The current map (nullptr until the first refresh succeeded) and its version;
  // version() is one relaxed load, so io threads check it per command.
  std::shared_ptr<const SlotMap> current() const;
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // Thread-safe. Why the last refresh found no map ("host:port: reason" of the last node asked),
  // empty once one succeeded: before the first map, clients are told this instead of just waiting.
  std::string last_failure() const;

  // Thread-safe: a refresh soon (now, unless one ran less than a second ago or one is running,
  // in which case the running or next one answers for it).
  void request_refresh(RefreshReason reason);

  std::uint64_t refreshes(RefreshReason reason) const {
    return refreshes_[static_cast<std::size_t>(reason)].load(std::memory_order_relaxed);
  }
  ClusterCounters& counters() { return counters_; }
  const ClusterCounters& counters() const { return counters_; }
  NodeGauges& node_gauges() { return node_gauges_; }
  const NodeGauges& node_gauges() const { return node_gauges_; }

  // Publishes `map` as a refresh would (tests, and the refresh itself).
  void publish(SlotMap map);

  // With read_from set: the nodes' replication offsets, polled from start() on (every io
  // thread's replica reads choose by them); null otherwise.
  std::shared_ptr<const ReplicaView> replicas() const { return replicas_; }

 private:
  boost::asio::awaitable<void> refresh_loop();
  boost::asio::awaitable<void> periodic();
  // One pass over the candidate nodes; true once one answered with a usable map.
  boost::asio::awaitable<bool> refresh_once();
  boost::asio::awaitable<SlotMapParse> ask(const config::Endpoint& node);

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  boost::asio::steady_timer periodic_timer_;
  boost::asio::steady_timer pace_timer_;
  bool stopped_ = false;
  bool running_ = false;           // executor thread only
  RefreshReason wanted_reason_{};  // executor thread only: why the pending refresh runs
  bool wanted_ = false;            // executor thread only
  std::chrono::steady_clock::time_point last_start_{};

  mutable std::mutex mutex_;
  std::shared_ptr<const SlotMap> map_;
  std::string last_failure_;
  std::atomic<std::uint64_t> version_{0};
  std::array<std::atomic<std::uint64_t>, kRefreshReasons> refreshes_{};
  ClusterCounters counters_;
  NodeGauges node_gauges_;
  std::shared_ptr<ReplicaView> replicas_;
  std::shared_ptr<ClusterReplicaPoller> replica_poller_;
};

}  // namespace corral::upstream
