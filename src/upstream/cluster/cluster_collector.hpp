// Prometheus families of Redis Cluster mode, read from the topology at scrape time.
#pragma once

#include <memory>

namespace prometheus {
class Collectable;
}
namespace corral::upstream {

class Topology;

// corral_cluster_redirects_total{kind}, corral_cluster_topology_refreshes_total{reason},
// corral_cluster_nodes{role}, corral_cluster_slots_served, corral_cluster_crossslot_refused_total,
// corral_cluster_requests_held, corral_cluster_holds_total,
// corral_cluster_hold_errors_total{reason}, corral_cluster_unknown_fate_writes_total, and per node
// of the map: corral_cluster_node_connections{node,role}, corral_cluster_node_slots{node,role},
// corral_cluster_node_topology_answers_total{node}; with read_from,
// corral_cluster_replicas_usable{primary}.
std::shared_ptr<prometheus::Collectable> make_cluster_metrics(
    std::shared_ptr<const Topology> topology);

}  // namespace corral::upstream
