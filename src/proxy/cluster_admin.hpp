// What Corral knows of the cluster, for operators: CORRAL.CLUSTER (the slot map it routes by,
// per node its role, health, slots and connections, and the refresh and redirect counters) and
// the per-node summary INFO adds on a cluster.
#pragma once

#include <string>

#include "proxy/local_commands.hpp"

namespace corral::upstream {
class ClusterLinks;
}

namespace corral::proxy {

// CORRAL.CLUSTER: a flat field/value array (like CORRAL.STATS); "nodes" holds one flat array per
// node. Answers an error when the upstream is not a cluster.
Action corral_cluster(LocalCall& call);

// INFO's "# ClusterNodes" section: one line per node (address, role, health, slots, connections).
void append_cluster_info(std::string& out, upstream::ClusterLinks& links);

}  // namespace corral::proxy
