// The wiring: the one place that names every concrete type. It builds the process-wide cache,
// per io thread the upstream pool, the read-through engine and the dispatcher (the session's
// Handler), and the background conversations with Redis (tracking, version pointers).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "config/settings.hpp"
#include "metrics/metrics.hpp"
#include "metrics/process_info.hpp"
#include "session/server.hpp"

namespace prometheus {
class Collectable;
}

namespace corral::upstream {
class Topology;
struct ThreadUpstream;
}  // namespace corral::upstream
namespace corral::slowlog {
class SlowLog;
}
namespace corral::stampede {
class CacheRuntime;
class ClusterInvalidation;
class InvalidationListener;
class HotKeys;
class HotKeyWindow;
}  // namespace corral::stampede

namespace corral::upstream {
class ClusterReadyProbe;
class ReplicaPoller;
class ReplicaView;
class SentinelWatch;
struct SentinelStatus;
}  // namespace corral::upstream

namespace corral {

class App {
 public:
  App(const config::Settings& settings, metrics::Metrics& metrics);
  ~App();

  // Serves until SIGINT or SIGTERM; throws std::system_error when an address cannot be bound.
  void run();

 private:
  struct ThreadParts;
  class StatusCollector;
  // Upstream changes by SIGHUP, for /metrics.
  struct UpstreamReloads {
    std::atomic<std::uint64_t> switched{0};
    std::atomic<std::uint64_t> failed{0};
  };

  // SIGHUP, on the first io thread: when the upstream settings changed, builds the new upstream,
  // and once it answers a PING, switches every thread's new requests to it; the previous one
  // drains for `drain` (shutdown_timeout). Otherwise keeps the running one (logged, counted).
  boost::asio::awaitable<void> switch_upstream(config::UpstreamSettings fresh,
                                               config::Duration drain);
  // On `thread`'s io thread: new requests go to `parts` from now on.
  void install_upstream(int thread, std::shared_ptr<upstream::ThreadUpstream> parts,
                        config::Duration drain);

  // Sentinel only: finds the primary and moves every thread's links and the tracking listener.
  void start_sentinel_watch();

  const config::Settings& settings_;
  metrics::ProcessInfo info_;
  session::Server server_;
  std::unique_ptr<stampede::CacheRuntime> cache_;
  UpstreamReloads upstream_reloads_;
  config::UpstreamSettings running_upstream_;  // first io thread only (switch_upstream)
  bool upstream_checking_ = false;             // first io thread only
  std::vector<std::unique_ptr<ThreadParts>> threads_;
  std::shared_ptr<stampede::InvalidationListener> listener_;
  std::shared_ptr<StatusCollector> status_;
  std::shared_ptr<upstream::Topology> topology_;  // Redis Cluster only
  // Redis Cluster only: one per io thread (see App::App).
  std::vector<std::shared_ptr<stampede::ClusterInvalidation>> cluster_tracking_;
  std::shared_ptr<prometheus::Collectable> cluster_metrics_;
  // Redis Cluster only: readiness follows every primary of the slot map, not the first seed.
  std::shared_ptr<upstream::ClusterReadyProbe> cluster_probe_;
  // Sentinel only: what the watch found, for /readyz and /metrics, and the watch itself.
  std::shared_ptr<upstream::SentinelStatus> sentinel_status_;
  std::shared_ptr<prometheus::Collectable> sentinel_metrics_;
  std::shared_ptr<upstream::SentinelWatch> sentinel_watch_;
  // Sentinel with read_from: the replicas and offsets every thread's reads are routed by.
  std::shared_ptr<upstream::ReplicaView> replica_view_;
  std::shared_ptr<upstream::ReplicaPoller> replica_poller_;
  std::unique_ptr<slowlog::SlowLog> slowlog_;  // null when slowlog.enabled is false
  std::shared_ptr<prometheus::Collectable> slowlog_metrics_;
  std::unique_ptr<stampede::HotKeys> hot_keys_;  // null when hot_keys.detect is false
  std::shared_ptr<stampede::HotKeyWindow> hot_key_window_;
  std::shared_ptr<prometheus::Collectable> hot_keys_metrics_;
};

}  // namespace corral
