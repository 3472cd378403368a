// The cluster collector: counters live as atomics in the topology; this only formats them.
#include "upstream/cluster/cluster_collector.hpp"

#include <map>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "config/values.hpp"
#include "metrics/metric_families.hpp"
#include "upstream/cluster/topology.hpp"

namespace corral::upstream {

namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

using metrics::make_family;

void add(MetricFamily& f, double value, std::string label = {}, std::string label_value = {}) {
  std::vector<prometheus::ClientMetric::Label> labels;
  if (!label.empty()) labels.push_back({std::move(label), std::move(label_value)});
  f.metric.push_back(metrics::make_sample(std::move(labels), f.type, value));
}

class ClusterMetrics final : public prometheus::Collectable {
 public:
  explicit ClusterMetrics(std::shared_ptr<const Topology> topology)
      : topology_(std::move(topology)) {}

  std::vector<MetricFamily> Collect() const override {
    std::vector<MetricFamily> out;
    const auto& counters = topology_->counters();
    auto redirects = make_family("corral_cluster_redirects_total",
                                 "MOVED, ASK and TRYAGAIN replies Corral followed for its clients.",
                                 MetricType::Counter);
    constexpr const char* kKinds[] = {"moved", "ask", "tryagain"};
    for (std::size_t i = 0; i < kRedirectKinds; ++i) {
      add(redirects, static_cast<double>(counters.redirects[i].load()), "kind", kKinds[i]);
    }
    out.push_back(std::move(redirects));
    auto refreshes =
        make_family("corral_cluster_topology_refreshes_total",
                    "Slot map refreshes started, by what asked for them.", MetricType::Counter);
    for (std::size_t i = 0; i < kRefreshReasons; ++i) {
      const auto reason = static_cast<RefreshReason>(i);
      add(refreshes, static_cast<double>(topology_->refreshes(reason)), "reason",
          std::string(refresh_reason_name(reason)));
    }
    out.push_back(std::move(refreshes));
    auto failures = make_family("corral_cluster_topology_refresh_failures_total",
                                "Refreshes in which no node answered with a usable slot map.",
                                MetricType::Counter);
    add(failures, static_cast<double>(counters.refresh_failures.load()));
    out.push_back(std::move(failures));
    auto crossslot = make_family("corral_cluster_crossslot_refused_total",
                                 "Commands refused with CROSSSLOT without touching a node.",
                                 MetricType::Counter);
    add(crossslot, static_cast<double>(counters.crossslot_refused.load()));
    out.push_back(std::move(crossslot));
    add_hold_series(out, counters);
    add_map_gauges(out);
    add_node_series(out);
    add_usable_replicas(out);
    return out;
  }

 private:
  static void add_hold_series(std::vector<MetricFamily>& out, const ClusterCounters& counters) {
    auto held = make_family("corral_cluster_requests_held",
                            "Client requests waiting for their slot's primary (a failover), or "
                            "sent again after waiting and not answered yet.",
                            MetricType::Gauge);
    add(held, static_cast<double>(counters.requests_held.load()));
    out.push_back(std::move(held));
    auto holds =
        make_family("corral_cluster_holds_total",
                    "Client requests that waited for their slot's primary.", MetricType::Counter);
    add(holds, static_cast<double>(counters.holds.load()));
    out.push_back(std::move(holds));
    auto errors = make_family("corral_cluster_hold_errors_total",
                              "Client requests answered with the error instead of waiting longer: "
                              "their hold expired, or failover_hold_max requests were waiting.",
                              MetricType::Counter);
    add(errors, static_cast<double>(counters.holds_expired.load()), "reason", "expired");
    add(errors, static_cast<double>(counters.holds_refused.load()), "reason", "full");
    out.push_back(std::move(errors));
    auto unknown = make_family("corral_cluster_unknown_fate_writes_total",
                               "Writes in flight on a node connection that died or timed out, "
                               "answered with the error since they may have run.",
                               MetricType::Counter);
    add(unknown, static_cast<double>(counters.unknown_fate_writes.load()));
    out.push_back(std::move(unknown));
  }

  void add_map_gauges(std::vector<MetricFamily>& out) const {
    const auto map = topology_->current();
    double primaries = 0;
    double empty_primaries = 0;
    double replicas = 0;
    double failing = 0;
    if (map) {
      std::vector<bool> owns(map->nodes.size(), false);
      for (int p : map->primaries) owns[p] = true;
      for (std::size_t i = 0; i < map->nodes.size(); ++i) {
        const auto& node = map->nodes[i];
        double& role = !node.healthy  ? failing
                       : owns[i]      ? primaries
                       : node.primary ? empty_primaries
                                      : replicas;
        role += 1;
      }
    }
    auto nodes =
        make_family("corral_cluster_nodes",
                    "Nodes in the slot map Corral routes by, by role: healthy primaries "
                    "owning slots, healthy primaries owning none, healthy replicas, and nodes "
                    "the cluster reports failed (any role).",
                    MetricType::Gauge);
    add(nodes, primaries, "role", "primary");
    add(nodes, empty_primaries, "role", "primary_without_slots");
    add(nodes, replicas, "role", "replica");
    add(nodes, failing, "role", "failed");
    out.push_back(std::move(nodes));
    auto slots = make_family("corral_cluster_slots_served",
                             "Hash slots (of 16384) that have a primary in Corral's slot map.",
                             MetricType::Gauge);
    add(slots, map ? static_cast<double>(map->slots_covered()) : 0.0);
    out.push_back(std::move(slots));
  }

  // One series per node of the current map: nodes that left it leave /metrics with it.
  void add_node_series(std::vector<MetricFamily>& out) const {
    auto connections = make_family(
        "corral_cluster_node_connections",
        "Ready upstream connections to the node over every io thread (shared pipelined ones "
        "and those dedicated to a client's MULTI, blocking command or subscription).",
        MetricType::Gauge);
    auto slots = make_family("corral_cluster_node_slots",
                             "Hash slots the node owns in Corral's slot map.", MetricType::Gauge);
    auto answers =
        make_family("corral_cluster_node_topology_answers_total",
                    "Topology refreshes whose slot map came from the node.", MetricType::Counter);
    const auto map = topology_->current();
    if (map) {
      std::vector<double> owned(map->nodes.size(), 0.0);
      for (const auto owner : map->owner) {
        if (owner >= 0) owned[static_cast<std::size_t>(owner)] += 1;
      }
      const auto& gauges = topology_->node_gauges();
      for (std::size_t i = 0; i < map->nodes.size(); ++i) {
        const auto& node = map->nodes[i];
        std::string address = config::format_endpoint(node.endpoint);
        const std::string role = !node.primary  ? "replica"
                                 : owned[i] > 0 ? "primary"
                                                : "primary_without_slots";
        const NodeFigures* figures = gauges.find(address);
        const double ready = figures ? figures->ready_connections.load() : 0;
        const double answered = figures ? static_cast<double>(figures->topology_answers.load()) : 0;
        connections.metric.push_back(
            metrics::make_sample({{"node", address}, {"role", role}}, connections.type, ready));
        slots.metric.push_back(
            metrics::make_sample({{"node", address}, {"role", role}}, slots.type, owned[i]));
        add(answers, answered, "node", std::move(address));
      }
    }
    out.push_back(std::move(connections));
    out.push_back(std::move(slots));
    out.push_back(std::move(answers));
  }

  // With read_from set: per primary, the replicas reads may go to now (link up, within
  // max_replica_lag), as the last offset poll found them.
  void add_usable_replicas(std::vector<MetricFamily>& out) const {
    const auto view = topology_->replicas();
    if (!view) return;
    auto usable = make_family("corral_cluster_replicas_usable",
                              "Replicas that reads may go to (read_from), per primary: link up and "
                              "within max_replica_lag at the last offset poll.",
                              MetricType::Gauge);
    std::map<std::string, double> by_primary;
    const auto map = topology_->current();
    if (map) {
      for (const int p : map->primaries) {
        by_primary[config::format_endpoint(map->nodes[p].endpoint)] = 0;
      }
    }
    for (const auto& replica : view->snapshot().replicas) by_primary[replica.primary] += 1;
    for (auto& [primary, count] : by_primary) add(usable, count, "primary", primary);
    out.push_back(std::move(usable));
  }

  std::shared_ptr<const Topology> topology_;
};

}  // namespace

std::shared_ptr<prometheus::Collectable> make_cluster_metrics(
    std::shared_ptr<const Topology> topology) {
  return std::make_shared<ClusterMetrics>(std::move(topology));
}

}  // namespace corral::upstream
