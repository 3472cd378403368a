// The upstream of one io thread, built from the settings: the one place that chooses the
// connections of its kind (one Redis, a Sentinel's primary, a Redis Cluster) and its readiness
// PINGs.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "config/settings.hpp"
#include "metrics/process_info.hpp"
#include "upstream/upstream.hpp"

namespace corral::metrics {
class ThreadStats;
}

namespace corral::upstream {

class ClusterPool;
class Pool;
class ReadyProbe;
class ReplicaReads;
class SentinelLinks;
class Topology;
class UserPools;
struct ReplicaView;
struct SentinelStatus;

// Readiness PINGs: often enough that a frozen upstream shows within about a second plus the
// deadline, rarely enough to cost nothing next to client traffic.
inline constexpr std::chrono::milliseconds kReadyProbeInterval{250};
std::chrono::milliseconds ready_probe_deadline(const config::UpstreamSettings& settings);

// Owns everything its Upstream uses; built, started and destroyed on its io thread.
struct ThreadUpstream {
  // `topology` for a Redis Cluster, `sentinel` for a Sentinel-managed primary (with `replicas`
  // when reads may go to its replicas), neither for one Redis. `info` must outlive this.
  ThreadUpstream(const boost::asio::any_io_executor& executor, config::UpstreamSettings settings,
                 metrics::ThreadStats& stats, metrics::ProcessInfo& info,
                 std::shared_ptr<Topology> topology, std::shared_ptr<SentinelStatus> sentinel,
                 std::shared_ptr<const ReplicaView> replicas = nullptr);
  ~ThreadUpstream();
  ThreadUpstream(const ThreadUpstream&) = delete;
  ThreadUpstream& operator=(const ThreadUpstream&) = delete;

  // Opens the connections and starts the readiness PINGs.
  void start() {
    start_connections();
    start_probe();
  }
  // The two halves: a reload opens the connections of an upstream it is checking, and starts its
  // readiness PINGs only once it is in use (one that does not answer must not count as stalled).
  void start_connections();
  void start_probe();

  const config::UpstreamSettings settings;        // what every part below reads
  std::unique_ptr<Pool> pool;                     // one Redis
  std::unique_ptr<SentinelLinks> sentinel_links;  // a Sentinel-managed primary
  std::unique_ptr<ClusterPool> cluster_pool;      // a Redis Cluster
  std::unique_ptr<UserPools> user_pools;          // clients' upstream ACL users
  std::unique_ptr<ReplicaReads> replica_reads;    // Sentinel with read_from
  std::unique_ptr<Upstream> upstream;
  std::shared_ptr<ReadyProbe> probe;  // one server: a cluster's probe is process-wide

  // The same Upstream, keeping all of this alive while held (what an UpstreamSwitch holds).
  static std::shared_ptr<Upstream> upstream_of(std::shared_ptr<ThreadUpstream> parts) {
    auto* upstream_ptr = parts->upstream.get();
    return {std::move(parts), upstream_ptr};
  }
};

}  // namespace corral::upstream
