// What Corral knows of the cluster, for operators: CORRAL.CLUSTER (the slot map it routes by,
// per node its role, health, slots and connections, and the refresh and redirect counters) and
// the per-node summary INFO adds on a cluster.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "upstream/cluster/cluster_links.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

// CORRAL.CLUSTER: a flat field/value array (like CORRAL.STATS); "nodes" holds one flat array per
// node.
void append_cluster_report(std::string& reply, ClusterLinks& links);

// INFO's "# ClusterNodes" section without asking the nodes: one line per node (address, role,
// health, slots, connections of this thread).
void append_cluster_info(std::string& out, ClusterLinks& links);

// INFO on a cluster: `sections` (Corral's own, rendered) then the "# ClusterNodes" section, whose
// primaries' lines also say whether the node answered (connected) and its key count (DBSIZE, sent
// to every primary at once). Answers slot `tag` of `client` when the last node answered or its
// command timed out.
void answer_cluster_info(ClusterLinks& links, std::string sections, std::size_t affinity,
                         const std::shared_ptr<ReplyTarget>& client, std::uint64_t tag);

}  // namespace corral::upstream
