// A multi-key command on a cluster, split by slot (not by key): one sub-command per slot, each
// with its keys in request order, sent to that slot's owner and merged into one reply.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/cluster_merge.hpp"

namespace corral::upstream {

// `keys`: positions in argv of the keys; each takes `group` arguments from there (MSET's key and
// value: 2). `options.slot` is set per part. The merged outcome reaches target->on_*(tag) once.
void send_split_by_slot(ClusterLinks& links, std::span<const std::string_view> argv,
                        std::span<const std::size_t> keys, std::size_t group, ClusterMerge merge,
                        ClusterCommandOptions options, const std::shared_ptr<ReplyTarget>& target,
                        std::uint64_t tag);

}  // namespace corral::upstream
