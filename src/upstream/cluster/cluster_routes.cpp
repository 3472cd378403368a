// The cluster routing table: every command whose cluster route is not the default.
#include "upstream/cluster/cluster_routes.hpp"

namespace corral::upstream {

namespace {

using enum ClusterRoute;
using enum ClusterMerge;

constexpr ClusterRouteRow kClusterRoutes[] = {
    {"mget", split_by_slot, values_in_key_order},
    {"mset", split_by_slot, all_ok},
    {"del", split_by_slot, sum},
    {"unlink", split_by_slot, sum},
    {"exists", split_by_slot, sum},
    {"touch", split_by_slot, sum},
    {"dbsize", all_primaries, sum},
    {"keys", all_primaries, concat},
    {"flushall", all_primaries, all_ok},
    {"flushdb", all_primaries, all_ok},
    {"script|flush", all_primaries, all_ok},
    {"script|load", all_primaries, agree},
    {"script|exists", all_primaries, agree},
    {"function|load", all_primaries, agree},
    {"function|flush", all_primaries, all_ok},
    // A pause for a failover is the whole cluster's: writes stop on every primary.
    {"client|pause", all_primaries, all_ok},
    {"client|unpause", all_primaries, all_ok},
    // Out of band: the busy script runs on one primary, which only the replies tell.
    {"script|kill", all_primaries, killed_anywhere},
    {"function|kill", all_primaries, killed_anywhere},
    {"randomkey", random_primary},
    {"scan", scan},
    {"shutdown", refused},
};

}  // namespace

const ClusterRouteRow* find_cluster_route(std::string_view row_name) {
  for (const auto& row : kClusterRoutes) {
    if (row.name == row_name) return &row;
  }
  return nullptr;
}

}  // namespace corral::upstream
