// Routes a client's request on a Redis Cluster (for requests that need no connection of their
// own): by slot, split by slot, to one primary or to all, as the command table's key specs and
// the cluster routing table (cluster_routes.hpp) say. Multi-key commands spanning slots that
// cannot be split are refused with CROSSSLOT here, without touching a node.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "config/settings.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/cluster_fast_path.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/cluster/cluster_routes.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/upstream.hpp"

namespace corral::upstream {

class ClusterRouter {
 public:
  ClusterRouter(ClusterLinks& links, const config::UpstreamSettings& settings);

  // One client request on the shared connections; its outcome reaches target->on_*(tag)
  // exactly once (an answer of Corral's own, such as CROSSSLOT, included).
  void send(const Routed& command, std::uint64_t tag, const std::shared_ptr<ReplyTarget>& target);

  // The slot every key of the request hashes to: kAnyPartition keyless, kSpansPartitions when
  // the keys span slots.
  int slot_of(const Routed& command);

  // A connection of the client's own to the node that serves `slot` (-1: any primary, for
  // pub/sub), a NodeBoundLink; nullptr when the map has no node for it.
  std::shared_ptr<Link> dedicated_for_slot(int slot, std::size_t affinity, int protocol);

  ClusterLinks& links() { return links_; }
  int max_redirects() const { return settings_.max_redirects; }
  // Keyed commands sent without a ClusterCommand and not answered yet.
  std::size_t fast_path_in_flight() const { return fast_path_->in_flight(); }

 private:
  // send() once the slot is known (kAnyPartition, kSpansPartitions or a slot).
  void send_routed(const Routed& command, int slot, std::uint64_t tag,
                   const std::shared_ptr<ReplyTarget>& target);
  void send_keyed(const Routed& command, int slot, std::uint64_t tag,
                  const std::shared_ptr<ReplyTarget>& target);
  void split(const Routed& command, const ClusterRouteRow& route, std::uint64_t tag,
             const std::shared_ptr<ReplyTarget>& target);
  void fan_out(const Routed& command, const ClusterRouteRow& route, std::uint64_t tag,
               const std::shared_ptr<ReplyTarget>& target);
  void scan(const Routed& command, std::uint64_t tag, const std::shared_ptr<ReplyTarget>& target);
  void to_node(const Routed& command, int node, std::string_view bytes, std::uint64_t tag,
               const std::shared_ptr<ReplyTarget>& target);
  std::uint16_t fingerprint();
  ClusterCommandOptions keyed_options(const Routed& command) const;
  void send_when_mapped(const Routed& command, std::uint64_t tag,
                        const std::shared_ptr<ReplyTarget>& target, int waited);

  ClusterLinks& links_;
  const config::UpstreamSettings& settings_;
  std::shared_ptr<ClusterFastPath> fast_path_;
  std::vector<std::size_t> keys_;  // reused: key positions of the current request
  std::uint64_t random_ = 0x9e3779b97f4a7c15ull;
};

}  // namespace corral::upstream
