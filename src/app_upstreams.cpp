// Every configured upstream, and the routers that send each key prefix to its upstream.
#include <utility>

#include "app_upstreams.hpp"

#include <algorithm>
#include <deque>
#include <mutex>

#include <boost/asio/post.hpp>

#include "upstream/routes/route_mirror.hpp"
#include "upstream/routes/routed_upstream.hpp"
#include "upstream/thread_upstream.hpp"

namespace corral {

namespace {

void add_label(prometheus::ClientMetric& metric, const std::string& name,
               const std::string& value) {
  metric.label.push_back({name, value});
}

// Appends `families` to `out`, each series labelled upstream=`name`, joining families that share
// a name (every cluster upstream exports corral_cluster_*): one family per name in the output.
void append_labelled(std::vector<prometheus::MetricFamily>& out,
                     std::vector<prometheus::MetricFamily> families, const std::string& name) {
  for (auto& family : families) {
    for (auto& metric : family.metric) add_label(metric, "upstream", name);
    auto same = std::find_if(out.begin(), out.end(), [&](const prometheus::MetricFamily& f) {
      return f.name == family.name;
    });
    if (same == out.end()) {
      out.push_back(std::move(family));
    } else {
      for (auto& metric : family.metric) same->metric.push_back(std::move(metric));
    }
  }
}

prometheus::MetricFamily family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void add_value(prometheus::MetricFamily& f, double value,
               std::vector<std::pair<std::string, std::string>> labels) {
  f.metric.emplace_back();
  for (auto& [name, text] : labels) add_label(f.metric.back(), name, text);
  if (f.type == prometheus::MetricType::Counter) {
    f.metric.back().counter.value = value;
  } else {
    f.metric.back().gauge.value = value;
  }
}

// A named upstream's ProcessInfo, kept for the life of the process: its connections, user pools
// and readiness probe count in it until the last of them goes, which can be in the io threads'
// own teardown after every UpstreamDeployments (a cluster's probe holds thread parts there;
// found by the ASan build at shutdown). One per named upstream and reload that rebuilds them.
metrics::ProcessInfo& kept_info() {
  static std::mutex mutex;
  static std::deque<metrics::ProcessInfo> kept;
  const std::lock_guard lock(mutex);
  return kept.emplace_back();
}

}  // namespace

UpstreamDeployments::UpstreamDeployments(UpstreamLayout layout,
                                         const UpstreamDeployment::Context& context,
                                         std::uint64_t epoch)
    : layout_(std::move(layout)), epoch_(epoch), server_(context.server) {
  deployments_.push_back({std::string(config::kDefaultUpstreamName), nullptr,
                          std::make_shared<UpstreamDeployment>(layout_.upstream, context, epoch),
                          false});
  for (const auto& [name, settings] : layout_.upstreams) {
    auto* info = &kept_info();
    const UpstreamDeployment::Context own{context.server, context.metrics, *info, context.cache,
                                          context.refresh};
    auto deployment = std::make_shared<UpstreamDeployment>(settings, own, epoch, name + "/");
    const bool routed_to = std::any_of(layout_.routes.begin(), layout_.routes.end(),
                                       [&](const auto& route) { return route.upstream == name; });
    deployments_.push_back({name, info, std::move(deployment), !routed_to});
  }
  build_routers(context);
}

UpstreamDeployments::~UpstreamDeployments() = default;

void UpstreamDeployments::build_routers(const UpstreamDeployment::Context& context) {
  const int threads = context.server.threads();
  if (layout_.routes.empty()) {
    for (int i = 0; i < threads; ++i) {
      thread_upstreams_.push_back(upstream::ThreadUpstream::upstream_of(
          deployments_.front().deployment->thread_upstream(i)));
    }
    return;
  }
  const auto index_of = [this](const std::string& name) {
    for (std::size_t i = 0; i < deployments_.size(); ++i) {
      if (deployments_[i].name == name) return i;
    }
    return upstream::kDefaultUpstream;  // the loader refuses unknown names
  };
  std::vector<upstream::KeyRoute> key_routes;
  std::vector<std::string> qualifiers;
  for (const auto& named : deployments_) {
    qualifiers.push_back(&named == &deployments_.front() ? std::string() : named.name + "/");
  }
  for (const auto& route : layout_.routes) {
    upstream::KeyRoute key_route{route.prefix, index_of(route.upstream)};
    if (route.mirror) {
      key_route.mirror = index_of(route.mirror->upstream);
      key_route.mirror_reads_percent = route.mirror->reads_percent;
    }
    key_routes.push_back(std::move(key_route));
  }
  auto table = std::make_shared<const upstream::RouteTable>(std::move(key_routes));
  for (const auto& route : table->routes()) {
    if (route.mirror == upstream::KeyRoute::kNoMirror) {
      mirror_counters_.push_back(nullptr);
      continue;
    }
    auto counters = std::make_shared<upstream::MirrorCounters>();
    counters->route = route.prefix;
    counters->upstream = deployments_[route.mirror].name;
    mirror_counters_.push_back(std::move(counters));
  }
  for (int i = 0; i < threads; ++i) {
    upstream::RoutedUpstream::Parts parts;
    parts.routes = table;
    parts.qualifiers = qualifiers;
    for (const auto& named : deployments_) {
      parts.upstreams.push_back(
          upstream::ThreadUpstream::upstream_of(named.deployment->thread_upstream(i)));
    }
    for (std::size_t r = 0; r < table->routes().size(); ++r) {
      const auto& route = table->routes()[r];
      const auto& settings = *std::find_if(layout_.routes.begin(), layout_.routes.end(),
                                           [&](const auto& s) { return s.prefix == route.prefix; });
      parts.mirrors.push_back(mirror_counters_[r]
                                  ? std::make_shared<upstream::RouteMirror>(
                                        parts.upstreams[route.mirror], settings.mirror->max_queue,
                                        route.mirror_reads_percent, mirror_counters_[r])
                                  : nullptr);
    }
    parts.counters = std::make_shared<upstream::RouteThreadCounters>(deployments_.size());
    route_counters_.push_back(parts.counters);
    thread_upstreams_.push_back(std::make_shared<upstream::RoutedUpstream>(std::move(parts)));
  }
}

std::vector<std::shared_ptr<upstream::ThreadUpstream>> UpstreamDeployments::thread_parts(
    int thread) const {
  std::vector<std::shared_ptr<upstream::ThreadUpstream>> parts;
  for (const auto& named : deployments_) {
    parts.push_back(named.deployment->thread_upstream(thread));
  }
  return parts;
}

void UpstreamDeployments::start(bool connect) {
  for (const auto& named : deployments_) named.deployment->start(connect);
}

void UpstreamDeployments::stop() {
  for (const auto& named : deployments_) named.deployment->stop();
  // Each thread's router holds that thread's parts: released on its own thread.
  for (int i = 0; i < server_.threads(); ++i) {
    boost::asio::post(server_.io(i),
                      [upstream = std::move(thread_upstreams_[static_cast<std::size_t>(i)])] {});
  }
}

std::string UpstreamDeployments::reason_of(const Named& named, std::string reason) const {
  if (reason.empty() || layout_.routes.empty()) return reason;
  return "upstream " + named.name + ": " + reason;
}

std::string UpstreamDeployments::not_ready_reason() const {
  for (const auto& named : deployments_) {
    if (named.mirror_only) continue;
    if (auto reason = reason_of(named, named.deployment->not_ready_reason()); !reason.empty())
      return reason;
  }
  return {};
}

std::string UpstreamDeployments::own_not_ready_reason() const {
  for (const auto& named : deployments_) {
    if (auto reason = reason_of(named, named.deployment->own_not_ready_reason()); !reason.empty())
      return reason;
  }
  return {};
}

bool UpstreamDeployments::tracking_live() const {
  // Every deployment tracks the policies' prefixes: each one's tracking must be up.
  return std::all_of(deployments_.begin(), deployments_.end(),
                     [](const Named& named) {
                       // A mirror's target serves no reads: what is written there straight
                       // concerns no cached value.
                       return named.mirror_only || !named.deployment->tracking_wanted() ||
                              named.deployment->tracking_live();
                     }) &&
         tracking_wanted();
}

bool UpstreamDeployments::tracking_wanted() const {
  return std::any_of(deployments_.begin(), deployments_.end(),
                     [](const Named& named) { return named.deployment->tracking_wanted(); });
}

std::uint64_t UpstreamDeployments::tracking_reconnects() const {
  std::uint64_t total = 0;
  for (const auto& named : deployments_) total += named.deployment->tracking_reconnects();
  return total;
}

void UpstreamDeployments::restart_tracking() {
  for (const auto& named : deployments_) named.deployment->restart_tracking();
}

std::vector<prometheus::MetricFamily> UpstreamDeployments::collect_metrics() const {
  if (layout_.routes.empty()) return deployments_.front().deployment->collect_metrics();
  std::vector<prometheus::MetricFamily> out;
  auto ready = family("corral_route_upstream_ready",
                      "1 when Corral can serve what this upstream serves, per upstream name.",
                      prometheus::MetricType::Gauge);
  auto commands = family("corral_route_commands_total",
                         "Client commands sent to each upstream by the routes (shared links).",
                         prometheus::MetricType::Counter);
  for (std::size_t i = 0; i < deployments_.size(); ++i) {
    const auto& named = deployments_[i];
    append_labelled(out, named.deployment->collect_metrics(), named.name);
    add_value(ready, named.deployment->not_ready_reason().empty() ? 1 : 0,
              {{"upstream", named.name}});
    std::uint64_t sent = 0;
    for (const auto& counters : route_counters_) {
      sent += counters->commands[i].load(std::memory_order_relaxed);
    }
    add_value(commands, static_cast<double>(sent), {{"upstream", named.name}});
  }
  out.push_back(std::move(ready));
  out.push_back(std::move(commands));
  auto refused = family("corral_route_cross_upstream_refused_total",
                        "Commands refused because their keys go to different upstreams.",
                        prometheus::MetricType::Counter);
  std::uint64_t cross = 0;
  for (const auto& counters : route_counters_) {
    cross += counters->cross_upstream_refused.load(std::memory_order_relaxed);
  }
  add_value(refused, static_cast<double>(cross), {});
  out.push_back(std::move(refused));
  auto mirrored = family("corral_mirror_commands_total",
                         "Copies of a route's commands for its mirror, by outcome: sent, dropped "
                         "(the queue was full or the mirror unreachable), failed (an error reply "
                         "or a lost connection; also counted as sent).",
                         prometheus::MetricType::Counter);
  auto queued = family("corral_mirror_queued",
                       "Copies sent to a route's mirror and not yet answered, all io threads.",
                       prometheus::MetricType::Gauge);
  for (const auto& counters : mirror_counters_) {
    if (!counters) continue;
    const auto& c = *counters;
    for (const auto& [outcome, value] : {std::pair{"sent", c.sent.load()},
                                         {"dropped", c.dropped.load()},
                                         {"failed", c.failed.load()}}) {
      add_value(mirrored, static_cast<double>(value),
                {{"route", c.route}, {"upstream", c.upstream}, {"outcome", outcome}});
    }
    add_value(queued, static_cast<double>(c.queued.load()),
              {{"route", c.route}, {"upstream", c.upstream}});
  }
  if (!mirrored.metric.empty()) {
    out.push_back(std::move(mirrored));
    out.push_back(std::move(queued));
  }
  return out;
}

std::string UpstreamDeployments::describe() const {
  std::string text = deployments_.front().deployment->describe();
  for (std::size_t i = 1; i < deployments_.size(); ++i) {
    text += "; " + deployments_[i].name + ": " + deployments_[i].deployment->describe();
  }
  return text;
}

}  // namespace corral
