// The wiring: the one place that names every concrete type. It builds the process-wide cache,
// per io thread the upstream pool, the read-through engine and the dispatcher (the session's
// Handler), and the background conversations with Redis (tracking, version pointers).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "app_upstreams.hpp"
#include "config/settings.hpp"
#include "metrics/metrics.hpp"
#include "metrics/process_info.hpp"
#include "session/server.hpp"

namespace prometheus {
class Collectable;
}

namespace corral::upstream {
struct ThreadUpstream;
}  // namespace corral::upstream
namespace corral::slowlog {
class SlowLog;
}
namespace corral::stampede {
class CacheRuntime;
class HotKeys;
class HotKeyWindow;
}  // namespace corral::stampede

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

  // SIGHUP, on the first io thread: when the upstream settings changed, builds a deployment of
  // the new upstream (any kind) beside the running one, and once it has found its servers and
  // answers a PING, switches every thread's new requests to it and stops the running one's
  // process-wide parts; the previous connections drain for `drain` (shutdown_timeout). Otherwise
  // keeps the running one (logged, counted).
  boost::asio::awaitable<void> switch_upstream(UpstreamLayout fresh, config::Duration drain);
  // Why `candidate` cannot take over ("" when it can), waiting up to its deadline.
  boost::asio::awaitable<std::string> check_candidate(UpstreamDeployments& candidate);
  // On `thread`'s io thread: new requests go to `candidate`'s upstream from now on.
  void install_upstream(int thread, const UpstreamDeployments& candidate, config::Duration drain);
  UpstreamDeployment::Context deployment_context();
  // Thread-safe: the upstreams in use.
  std::shared_ptr<UpstreamDeployments> deployment() const;

  const config::Settings& settings_;
  metrics::ProcessInfo info_;
  session::Server server_;
  metrics::Metrics& metrics_;
  std::unique_ptr<stampede::CacheRuntime> cache_;
  UpstreamReloads upstream_reloads_;
  bool upstream_checking_ = false;  // first io thread only
  std::vector<std::unique_ptr<ThreadParts>> threads_;
  mutable std::mutex deployment_mutex_;  // deployment_ is read by /readyz and /metrics
  std::shared_ptr<UpstreamDeployments> deployment_;
  std::shared_ptr<StatusCollector> status_;
  std::unique_ptr<slowlog::SlowLog> slowlog_;  // null when slowlog.enabled is false
  std::shared_ptr<prometheus::Collectable> slowlog_metrics_;
  std::unique_ptr<stampede::HotKeys> hot_keys_;  // null when hot_keys.detect is false
  std::shared_ptr<stampede::HotKeyWindow> hot_key_window_;
  std::shared_ptr<prometheus::Collectable> hot_keys_metrics_;
};

}  // namespace corral
