// Wiring of one configured upstream, the one place that chooses its process-wide parts by kind: a
// Redis Cluster's slot map, readiness probe and per-node tracking; a Sentinel's watch and replica
// poller; one Redis's tracking listener; and every io thread's connections (ThreadUpstream).
// A SIGHUP that changes the upstream builds another deployment next to this one and retires this
// one once every thread has switched (App::switch_upstream).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "config/settings.hpp"
#include "metrics/metrics.hpp"
#include "metrics/process_info.hpp"
#include "session/server.hpp"

namespace prometheus {
class Collectable;
}
namespace corral::stampede {
class CacheRuntime;
class ClusterInvalidation;
class InvalidationListener;
}  // namespace corral::stampede
namespace corral::upstream {
class ClusterReadyProbe;
class ReplicaPoller;
class SentinelWatch;
class Topology;
struct ReplicaView;
struct SentinelStatus;
struct ThreadUpstream;
}  // namespace corral::upstream

namespace corral {

class UpstreamDeployment : public std::enable_shared_from_this<UpstreamDeployment> {
 public:
  struct Context {
    session::Server& server;
    metrics::Metrics& metrics;
    metrics::ProcessInfo& info;
    stampede::CacheRuntime& cache;
    // Thread 0's tracking applies each invalidated key through it (a refresh refetches).
    std::function<void(std::string_view)> refresh;
  };

  // `epoch`: the generation of every thread's UpstreamSwitch while this deployment is in use
  // (0 for the one configured at start, then one more per switch). Hot-key tracking links are
  // registered under it, so a fill never redirects to another deployment's link.
  // `qualifier`: how the routed upstream prefixes this deployment's server names ("sessions/";
  // "" for the default), which its hot-key tracking links register under too.
  UpstreamDeployment(config::UpstreamSettings settings, Context context, std::uint64_t epoch,
                     std::string qualifier = {});
  ~UpstreamDeployment();
  UpstreamDeployment(const UpstreamDeployment&) = delete;
  UpstreamDeployment& operator=(const UpstreamDeployment&) = delete;

  const config::UpstreamSettings& settings() const { return settings_; }
  std::uint64_t epoch() const { return epoch_; }

  // Thread `thread`'s connections, built with the deployment (not started): built before the io
  // threads run, or on io thread 0 during a reload and handed to each thread by a post.
  std::shared_ptr<upstream::ThreadUpstream> thread_upstream(int thread) const {
    return threads_[static_cast<std::size_t>(thread)];
  }

  // Starts what finds and watches the servers (the slot map, the Sentinel watch, the cluster's
  // readiness probe) and the tracking of invalidations, each on its io thread. `connect`: also
  // opens every thread's connections (a reload's candidate; at start-up App::run opens them).
  void start(bool connect);
  // Stops all of it (on io thread 0). The threads' connections stay with their UpstreamSwitch,
  // which drains and releases them.
  void stop();

  // Thread-safe: why /readyz answers 503, empty when ready.
  std::string not_ready_reason() const;
  // Thread-safe: the part of not_ready_reason() that is this deployment's own (the slot map's
  // primaries, the Sentinel's primary), for checking a reload's candidate before it is in use:
  // the process counters of the single-server kinds count the running upstream as well.
  std::string own_not_ready_reason() const;

  // Thread-safe, for /metrics: every tracking link is up (and one is wanted), one is wanted, and
  // how many ended and were opened again.
  bool tracking_live() const;
  bool tracking_wanted() const;
  std::uint64_t tracking_reconnects() const;
  // The policies changed: every tracking link tracks the new prefixes.
  void restart_tracking();

  // The kind's own series (cluster nodes and slots, Sentinel state), read at scrape time.
  std::vector<prometheus::MetricFamily> collect_metrics() const;
  // For the log: "cluster, seed host:port and 2 more", "host:port", "the primary of NAME ...".
  std::string describe() const;

 private:
  void start_sentinel_watch();
  // On io thread 0, once (a Sentinel's when its primary is first known).
  void start_listener();
  // Posts `apply` to every thread with that thread's Sentinel links.
  template <typename Apply>
  void on_every_sentinel_thread(Apply apply);

  const config::UpstreamSettings settings_;
  Context context_;
  const std::uint64_t epoch_;
  const std::string qualifier_;
  std::vector<std::shared_ptr<upstream::ThreadUpstream>> threads_;  // released by stop()

  // One Redis and Sentinel: the one tracking listener, on io thread 0.
  std::shared_ptr<stampede::InvalidationListener> listener_;
  bool listener_started_ = false;  // io thread 0 only
  // Redis Cluster: the slot map, every thread's per-node tracking, and readiness by slot.
  std::shared_ptr<upstream::Topology> topology_;
  std::vector<std::shared_ptr<stampede::ClusterInvalidation>> cluster_tracking_;
  std::shared_ptr<upstream::ClusterReadyProbe> cluster_probe_;
  std::shared_ptr<prometheus::Collectable> kind_metrics_;
  // Sentinel: what the watch found, the watch, and with read_from the replicas' view and poller.
  std::shared_ptr<upstream::SentinelStatus> sentinel_status_;
  std::shared_ptr<upstream::SentinelWatch> sentinel_watch_;
  std::shared_ptr<upstream::ReplicaView> replica_view_;
  std::shared_ptr<upstream::ReplicaPoller> replica_poller_;
};

}  // namespace corral
