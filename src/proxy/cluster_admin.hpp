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

// INFO's "# ClusterNodes" section without asking the nodes: one line per node (address, role,
// health, slots, connections of this thread).
void append_cluster_info(std::string& out, upstream::ClusterLinks& links);

// INFO on a cluster: `sections` (Corral's own, rendered) then the "# ClusterNodes" section, whose
// primaries' lines also say whether the node answered (connected) and its key count (DBSIZE, sent
// to every primary at once). Answers slot call.tag of *call.target when the last node answered or
// its command timed out, and sets call.deferred.
void answer_cluster_info(LocalCall& call, std::string sections);

}  // namespace corral::proxy
