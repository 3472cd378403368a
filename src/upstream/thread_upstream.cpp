// ThreadUpstream: the choice of connections by upstream kind, made once per io thread.
#include "upstream/thread_upstream.hpp"

#include <utility>

#include "upstream/cluster/cluster_pool.hpp"
#include "upstream/cluster/cluster_upstream.hpp"
#include "upstream/cluster/cluster_user_upstream.hpp"
#include "upstream/sentinel/replica_reads.hpp"
#include "upstream/sentinel/sentinel_links.hpp"
#include "upstream/sentinel/sentinel_status.hpp"
#include "upstream/sentinel/sentinel_user_upstream.hpp"
#include "upstream/single/pool.hpp"
#include "upstream/single/ready_probe.hpp"
#include "upstream/single/single_upstream.hpp"
#include "upstream/single/single_user_upstream.hpp"
#include "upstream/user_pools.hpp"

namespace corral::upstream {

std::chrono::milliseconds ready_probe_deadline(const config::UpstreamSettings& settings) {
  const auto timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(settings.command_timeout);
  return timeout.count() > 0 ? timeout : std::chrono::milliseconds(2000);
}

ThreadUpstream::ThreadUpstream(const boost::asio::any_io_executor& executor,
                               config::UpstreamSettings upstream_settings,
                               metrics::ThreadStats& stats, metrics::ProcessInfo& info,
                               std::shared_ptr<Topology> topology,
                               std::shared_ptr<SentinelStatus> sentinel,
                               std::shared_ptr<const ReplicaView> replicas)
    : settings(std::move(upstream_settings)) {
  if (topology) {
    cluster_pool = std::make_unique<ClusterPool>(executor, settings, topology, &stats);
    // Upstream ACL users' pools: each a ClusterPool of the user's over the same topology.
    user_pools = std::make_unique<UserPools>(
        executor, settings, &info.user_pools,
        [executor, user_settings = settings, stats = &stats, topology](UserLogin login) {
          return make_cluster_user_upstream(executor, user_settings, topology, stats,
                                            std::move(login));
        });
    auto cluster = std::make_unique<ClusterUpstream>(executor, *cluster_pool, settings);
    cluster->set_user_pools(user_pools.get());
    upstream = std::move(cluster);
    return;
  }
  Links* one_server = nullptr;
  if (sentinel) {
    sentinel_links = std::make_unique<SentinelLinks>(
        executor, settings, &stats, &info.ready_upstream_connections, std::move(sentinel));
    one_server = sentinel_links.get();
    // Upstream ACL users' pools: links that follow the primary with this thread's own.
    user_pools = std::make_unique<UserPools>(
        executor, settings, &info.user_pools,
        [executor, database = settings.database, leader = sentinel_links.get()](UserLogin login) {
          return make_sentinel_user_upstream(executor, database, *leader, std::move(login));
        });
  } else {
    pool = std::make_unique<Pool>(executor, settings, &stats, &info.ready_upstream_connections);
    // Upstream ACL users' pools: for one Redis at a fixed address.
    user_pools = std::make_unique<UserPools>(
        executor, settings, &info.user_pools,
        [executor, user_settings = settings, stats = &stats](UserLogin login) {
          return make_single_user_upstream(executor, user_settings, stats, std::move(login));
        });
    one_server = pool.get();
  }
  // A Sentinel-managed primary is one Redis at a time: the single-Redis upstream over links
  // that follow the primary.
  auto single = std::make_unique<SingleUpstream>(executor, *one_server, settings.database);
  single->set_user_pools(user_pools.get());
  if (sentinel_links && replicas) {
    // A Sentinel primary's replicas, when reads may go to them.
    replica_reads = std::make_unique<ReplicaReads>(executor, settings, &stats, *sentinel_links,
                                                   std::move(replicas));
    single->set_replica_reads(replica_reads.get());
  }
  upstream = std::move(single);
  probe =
      std::make_shared<ReadyProbe>(executor, *one_server, settings.database, kReadyProbeInterval,
                                   ready_probe_deadline(settings), info.stalled_upstreams);
}

ThreadUpstream::~ThreadUpstream() {
  // The probe's loop outlives this object (it holds itself): it must stop touching the links.
  if (probe) probe->stop();
}

void ThreadUpstream::start_connections() {
  if (pool) pool->start();
}

void ThreadUpstream::start_probe() {
  if (probe) probe->start();
}

}  // namespace corral::upstream
