// How commands travel on a Redis Cluster, as data: keyed commands go to their slot's primary
// unless a row here says otherwise; keyless ones go to one primary unless a row fans them out.
#pragma once

#include <cstdint>
#include <string_view>

#include "upstream/cluster/cluster_merge.hpp"

namespace corral::upstream {

enum class ClusterRoute : std::uint8_t {
  by_slot,         // one slot's primary (the default for keyed commands)
  split_by_slot,   // keys spanning slots: one sub-command per slot, merged in key order
  any_primary,     // keyless: one primary (the default for keyless commands)
  random_primary,  // keyless: a random primary (RANDOMKEY)
  all_primaries,   // keyless: every primary, replies merged (see ClusterMerge)
  scan,            // SCAN: walks the primaries one after the other
  refused,         // no node is the right one: answered with kErrRefusedOnCluster
};

// SHUTDOWN to a cluster: one arbitrary primary would stop and fail its slots over, which is not
// what "shut the server down" means; a single Redis stops as asked (when allowed).
inline constexpr std::string_view kErrRefusedOnCluster =
    "ERR SHUTDOWN is refused with a Redis Cluster upstream: it would stop one arbitrary primary "
    "and "
    "fail its slots over; shut nodes down on the nodes themselves";

struct ClusterRouteRow {
  std::string_view name;  // the command table's row name ("script|load")
  ClusterRoute route;
  ClusterMerge merge = ClusterMerge::none;
};

// The row for a command table row name; nullptr: the defaults above.
const ClusterRouteRow* find_cluster_route(std::string_view row_name);

}  // namespace corral::upstream
