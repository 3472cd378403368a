// The Upstream of a Redis Cluster: commands routed by slot, split or fanned out (ClusterRouter),
// session links bound to one node (NodeBoundLink), and questions about the server asked of any
// primary that answers.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include "config/settings.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/cluster/cluster_router.hpp"
#include "upstream/upstream.hpp"

namespace corral::upstream {

class UserPools;

class ClusterUpstream final : public Upstream {
 public:
  // `links` (a ClusterPool; a recorder in tests) and `settings` must outlive this.
  ClusterUpstream(const boost::asio::any_io_executor& executor, ClusterLinks& links,
                  const config::UpstreamSettings& settings)
      : executor_(executor), links_(links), settings_(settings), router_(links, settings) {}

  bool send(const Routed& command, std::uint64_t tag,
            const std::shared_ptr<ReplyTarget>& target) override {
    router_.send(command, tag, target);
    return true;
  }
  bool partitioned() const override { return true; }
  int partition_of(const Routed& command) override { return router_.slot_of(command); }
  SessionLinkResult open_session_link(int partition, const Routed& command) override;
  void note_cross_partition_refusal() override;
  bool send_out_of_band(const Routed& command, std::uint64_t tag,
                        const std::shared_ptr<ReplyTarget>& target) override;
  bool ask_server(std::string_view command, std::uint64_t tag,
                  const std::shared_ptr<ReplyTarget>& target) override;
  boost::asio::awaitable<CallResult> call_server(std::string command) override;
  // The set of primaries: a failover or a new node is a server that may differ.
  std::uint64_t server_epoch() const override;
  ServerSend send_to_server(std::string_view server, std::string_view command, int database,
                            std::size_t affinity, int protocol, std::uint64_t tag,
                            const std::shared_ptr<ReplyTarget>& target) override;
  void answer_info(std::string_view info_command, std::string corral_only, bool servers_wanted,
                   std::size_t affinity, std::uint64_t tag,
                   const std::shared_ptr<ReplyTarget>& merge,
                   const std::shared_ptr<ReplyTarget>& client) override;
  bool report_topology(std::string& reply) override;
  std::shared_ptr<Link> open_own_link(int database, int protocol) override;
  std::optional<std::string> server_of_key(std::string_view key) override;
  std::shared_ptr<Link> open_own_link_to(std::string_view server, int database,
                                         int protocol) override;
  std::shared_ptr<KeyedCaller> keyed_caller(const KeyedCallerOptions& options) override;
  void fetch(std::span<const std::string_view> argv, std::string_view bytes, int database,
             const std::shared_ptr<ReplyTarget>& target) override;
  void fetch_from_replica(std::span<const std::string_view> argv, std::string_view bytes,
                          int database, std::optional<std::chrono::steady_clock::time_point> seen,
                          const std::shared_ptr<ReplyTarget>& target) override;

  // Upstream ACL users get their pools from `users` (which must outlive this); unset, as_user
  // is unsupported (a user's own upstream hands out no further users).
  void set_user_pools(UserPools* users) { users_ = users; }
  UserUpstreamResult as_user(std::string_view user, std::string_view password,
                             int entered_database) override;

  ClusterLinks& links() { return links_; }
  ClusterRouter& router() { return router_; }

 private:
  void send_fill(std::span<const std::string_view> argv, std::string_view bytes,
                 ClusterCommandOptions::ReplicaFill replica_fill,
                 const std::shared_ptr<ReplyTarget>& target);

  boost::asio::any_io_executor executor_;
  ClusterLinks& links_;
  const config::UpstreamSettings& settings_;
  ClusterRouter router_;
  UserPools* users_ = nullptr;
};

}  // namespace corral::upstream
