// The Upstream of one Redis: every command on the shared connections of one server, session
// links and out-of-band commands on connections of their own to it.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include "upstream/link.hpp"
#include "upstream/upstream.hpp"

namespace corral::upstream {

class ReplicaReads;
class UserPools;

class SingleUpstream final : public Upstream {
 public:
  // `links` (a Pool; a recorder in tests) must outlive this; `database` is the configured one,
  // which questions about the server use.
  SingleUpstream(const boost::asio::any_io_executor& executor, Links& links, int database)
      : executor_(executor), links_(links), database_(database) {}

  bool send(const Routed& command, std::uint64_t tag,
            const std::shared_ptr<ReplyTarget>& target) override {
    if (replica_reads_ != nullptr) return send_with_replica_reads(command, tag, target);
    return links_.send_shared(command.database, command.affinity, command.bytes, target, tag,
                              command.protocol);
  }
  bool partitioned() const override { return false; }
  int database() const override { return database_; }
  int partition_of(const Routed&) override { return kAnyPartition; }
  SessionLinkResult open_session_link(int partition, const Routed& command) override;
  void recycle_session_link(std::shared_ptr<Link> link, int database, int protocol) override {
    links_.recycle_dedicated(std::move(link), database, protocol);
  }
  // Never refused: one server holds every key.
  void note_cross_partition_refusal() override {}
  bool send_out_of_band(const Routed& command, std::uint64_t tag,
                        const std::shared_ptr<ReplyTarget>& target) override;
  bool ask_server(std::string_view command, std::uint64_t tag,
                  const std::shared_ptr<ReplyTarget>& target) override;
  boost::asio::awaitable<CallResult> call_server(std::string command) override;
  std::uint64_t server_epoch() const override { return links_.server_epoch(); }
  ServerSend send_to_server(std::string_view server, std::string_view command, int database,
                            std::size_t affinity, int protocol, std::uint64_t tag,
                            const std::shared_ptr<ReplyTarget>& target) override;
  void answer_info(std::string_view info_command, std::string corral_only, bool servers_wanted,
                   std::size_t affinity, std::uint64_t tag,
                   const std::shared_ptr<ReplyTarget>& merge,
                   const std::shared_ptr<ReplyTarget>& client) override;
  bool report_topology(std::string&) override { return false; }
  std::shared_ptr<Link> open_own_link(int database, int protocol) override;
  std::optional<std::string> server_of_key(std::string_view) override { return std::string(); }
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
  // A Sentinel primary with read_from set: client commands go through `reads` (which must
  // outlive this), which sends reads to replicas.
  void set_replica_reads(ReplicaReads* reads) { replica_reads_ = reads; }

 private:
  bool send_with_replica_reads(const Routed& command, std::uint64_t tag,
                               const std::shared_ptr<ReplyTarget>& target);

  boost::asio::any_io_executor executor_;
  Links& links_;
  int database_;
  UserPools* users_ = nullptr;
  ReplicaReads* replica_reads_ = nullptr;
};

}  // namespace corral::upstream
