// Wiring of every configured upstream: the default (`upstream:`) and the named ones
// (`upstreams:`), each an UpstreamDeployment, and with `routes:` each io thread's RoutedUpstream
// over them. What App holds, reloads and asks for readiness and metrics.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "app_upstream.hpp"
#include "config/settings.hpp"

namespace corral::upstream {
class Upstream;
struct MirrorCounters;
struct RouteThreadCounters;
struct ThreadUpstream;
}  // namespace corral::upstream

namespace corral {

// The settings that decide the upstreams: a reload that changes any of them builds a new set.
struct UpstreamLayout {
  config::UpstreamSettings upstream;
  std::map<std::string, config::UpstreamSettings> upstreams;
  std::vector<config::RouteSettings> routes;
  bool operator==(const UpstreamLayout&) const = default;

  static UpstreamLayout of(const config::Settings& settings) {
    return {settings.upstream, settings.upstreams, settings.routes};
  }
};

class UpstreamDeployments {
 public:
  // `epoch` as UpstreamDeployment's. Named deployments count their connections' readiness in
  // their own ProcessInfo, so /readyz can tell which upstream is not ready.
  UpstreamDeployments(UpstreamLayout layout, const UpstreamDeployment::Context& context,
                      std::uint64_t epoch);
  ~UpstreamDeployments();
  UpstreamDeployments(const UpstreamDeployments&) = delete;
  UpstreamDeployments& operator=(const UpstreamDeployments&) = delete;

  const UpstreamLayout& layout() const { return layout_; }
  std::uint64_t epoch() const { return epoch_; }

  // What thread `thread`'s UpstreamSwitch forwards to (the default upstream's own Upstream when
  // no routes are configured), keeping every part it uses alive.
  std::shared_ptr<upstream::Upstream> thread_upstream(int thread) const {
    return thread_upstreams_[static_cast<std::size_t>(thread)];
  }
  // Thread `thread`'s connections of every upstream, to start on that thread.
  std::vector<std::shared_ptr<upstream::ThreadUpstream>> thread_parts(int thread) const;

  void start(bool connect);
  void stop();

  // Thread-safe: why /readyz answers 503 ("" when ready); a named upstream's reason names it.
  // An upstream that is only a mirror's target does not count.
  std::string not_ready_reason() const;
  std::string own_not_ready_reason() const;
  bool tracking_live() const;
  bool tracking_wanted() const;
  std::uint64_t tracking_reconnects() const;
  void restart_tracking();
  // Each kind's series (labelled upstream="name" when routes are configured), per-upstream
  // readiness, routed commands and mirrors.
  std::vector<prometheus::MetricFamily> collect_metrics() const;
  std::string describe() const;

 private:
  struct Named {
    std::string name;
    metrics::ProcessInfo* info;  // null for the default (the process's); see kept_info()
    std::shared_ptr<UpstreamDeployment> deployment;
    // Only a mirror's target (no route sends to it): its readiness is not Corral's, since a
    // mirror never stands in the client's way; the reload still waits for it (no copy dropped).
    bool mirror_only = false;
  };
  void build_routers(const UpstreamDeployment::Context& context);
  // Why `named` is not ready, prefixed with its name when routes are configured.
  std::string reason_of(const Named& named, std::string reason) const;

  const UpstreamLayout layout_;
  const std::uint64_t epoch_;
  session::Server& server_;
  std::vector<Named> deployments_;  // [0]: the default
  std::vector<std::shared_ptr<upstream::Upstream>> thread_upstreams_;
  std::vector<std::shared_ptr<upstream::RouteThreadCounters>> route_counters_;  // per thread
  std::vector<std::shared_ptr<upstream::MirrorCounters>> mirror_counters_;      // per mirror
};

}  // namespace corral
