// ThreadUpstream: the choice of connections by upstream kind, made once per io thread.
#include "upstream/thread_upstream.hpp"

#include <utility>

#include "upstream/cluster/cluster_pool.hpp"
#include "upstream/cluster/cluster_upstream.hpp"
#include "upstream/sentinel/sentinel_links.hpp"
#include "upstream/sentinel/sentinel_status.hpp"
#include "upstream/single/pool.hpp"
#include "upstream/single/ready_probe.hpp"
#include "upstream/single/single_upstream.hpp"
#include "upstream/single/user_pools.hpp"

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
                               std::shared_ptr<SentinelStatus> sentinel)
    : settings(std::move(upstream_settings)) {
  if (topology) {
    cluster_pool = std::make_unique<ClusterPool>(executor, settings, std::move(topology), &stats);
    upstream = std::make_unique<ClusterUpstream>(executor, *cluster_pool, settings);
    return;
  }
  Links* one_server = nullptr;
  if (sentinel) {
    sentinel_links = std::make_unique<SentinelLinks>(
        executor, settings, &stats, &info.ready_upstream_connections, std::move(sentinel));
    one_server = sentinel_links.get();
  } else {
    pool = std::make_unique<Pool>(executor, settings, &stats, &info.ready_upstream_connections);
    // Upstream ACL users' pools: for one Redis at a fixed address (not a Sentinel's primary).
    user_pools = std::make_unique<UserPools>(executor, settings, &stats, &info.user_pools);
    one_server = pool.get();
  }
  // A Sentinel-managed primary is one Redis at a time: the single-Redis upstream over links
  // that follow the primary.
  auto single = std::make_unique<SingleUpstream>(executor, *one_server, settings.database);
  single->set_user_pools(user_pools.get());
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
