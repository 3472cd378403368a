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
#include "proxy/client_state.hpp"
#include "proxy/cluster_routes.hpp"
#include "proxy/command_table.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/cluster_fast_path.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

inline constexpr std::string_view kErrCrossSlot =
    "CROSSSLOT Keys in request don't hash to the same slot";

class ClusterRouter {
 public:
  ClusterRouter(upstream::ClusterLinks& links, const config::UpstreamSettings& settings);

  // One request of `client` on the shared connections; its outcome reaches target->on_*(tag)
  // exactly once (an answer of Corral's own, such as CROSSSLOT, included).
  void send(const ClientState& client, const CommandSpec& row,
            std::span<const std::string_view> argv, std::string_view bytes, std::uint64_t tag,
            const std::shared_ptr<upstream::ReplyTarget>& target);

  // The slot every key of the request hashes to: -1 keyless, -2 keys span slots.
  int slot_of(const CommandSpec& row, std::span<const std::string_view> argv);

  // A connection of the client's own to the node that serves `slot` (-1: any primary, for
  // pub/sub), a NodeBoundLink; nullptr when the map has no node for it.
  std::shared_ptr<upstream::Link> dedicated_for_slot(int slot, std::size_t affinity, int protocol);

  upstream::ClusterLinks& links() { return links_; }
  int max_redirects() const { return settings_.max_redirects; }
  // Keyed commands sent without a ClusterCommand and not answered yet.
  std::size_t fast_path_in_flight() const { return fast_path_->in_flight(); }

 private:
  void send_keyed(const ClientState& client, const CommandSpec& row, std::string_view bytes,
                  int slot, std::uint64_t tag,
                  const std::shared_ptr<upstream::ReplyTarget>& target);
  void split(const ClientState& client, const CommandSpec& row, const ClusterRouteRow& route,
             std::span<const std::string_view> argv, std::uint64_t tag,
             const std::shared_ptr<upstream::ReplyTarget>& target);
  void fan_out(const ClientState& client, const ClusterRouteRow& route, std::string_view bytes,
               std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target);
  void scan(const ClientState& client, std::span<const std::string_view> argv, std::uint64_t tag,
            const std::shared_ptr<upstream::ReplyTarget>& target);
  void to_node(const ClientState& client, int node, std::string_view bytes, std::uint64_t tag,
               const std::shared_ptr<upstream::ReplyTarget>& target);
  std::uint16_t fingerprint();
  int clusterdown_retries() const;
  upstream::ClusterCommandOptions keyed_options(const ClientState& client,
                                                const CommandSpec& row) const;
  void send_when_mapped(const ClientState& client, const CommandSpec& row,
                        std::span<const std::string_view> argv, std::string_view bytes,
                        std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                        int waited);

  upstream::ClusterLinks& links_;
  const config::UpstreamSettings& settings_;
  std::shared_ptr<upstream::ClusterFastPath> fast_path_;
  std::vector<std::size_t> keys_;  // reused: key positions of the current request
  std::uint64_t random_ = 0x9e3779b97f4a7c15ull;
};

}  // namespace corral::proxy
