// The upstream every caller on an io thread holds: it forwards to the upstream in use and lets a
// reload put a new one in its place at a request boundary, the previous one draining meanwhile.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "upstream/upstream.hpp"

namespace corral::upstream {

// Contract: one per io thread, used on that thread only. Each command goes to the upstream in use
// when it is sent; what was sent before a switch is answered by the upstream it went to, which
// stays alive (with the session links it opened) until retire_previous().
class UpstreamSwitch final : public Upstream {
 public:
  explicit UpstreamSwitch(std::shared_ptr<Upstream> first) : current_(std::move(first)) {}

  // New commands, session links and keyed conversations go to `next` from now on.
  void switch_to(std::shared_ptr<Upstream> next);
  // Ends the upstreams switched away from before generation() was `generation`: the session
  // links they opened that a client still holds (a MULTI, a block, a subscription outliving the
  // drain deadline) are closed, failing what waits on them, and the upstreams are released.
  // Returns the links closed.
  std::size_t retire_previous(std::uint64_t generation);
  // Upstreams switched away from and not yet retired.
  std::size_t draining() const { return previous_.size(); }

  bool send(const Routed& command, std::uint64_t tag,
            const std::shared_ptr<ReplyTarget>& target) override {
    return current_->send(command, tag, target);
  }
  bool partitioned() const override { return current_->partitioned(); }
  bool selects_databases() const override { return current_->selects_databases(); }
  bool link_serves(int link_partition, int partition, bool subscribes) override {
    return current_->link_serves(link_partition, partition, subscribes);
  }
  int partition_of(const Routed& command) override { return current_->partition_of(command); }
  SessionLinkResult open_session_link(int partition, const Routed& command) override;
  // The dispatcher recycles only links opened on the upstream in use (see generation()).
  void recycle_session_link(std::shared_ptr<Link> link, int database, int protocol) override {
    current_->recycle_session_link(std::move(link), database, protocol);
  }
  void note_cross_partition_refusal() override { current_->note_cross_partition_refusal(); }
  std::string_view cross_partition_error() const override {
    return current_->cross_partition_error();
  }
  bool send_out_of_band(const Routed& command, std::uint64_t tag,
                        const std::shared_ptr<ReplyTarget>& target) override {
    return current_->send_out_of_band(command, tag, target);
  }
  bool ask_server(std::string_view command, std::uint64_t tag,
                  const std::shared_ptr<ReplyTarget>& target) override {
    return current_->ask_server(command, tag, target);
  }
  boost::asio::awaitable<CallResult> call_server(std::string command) override;
  // A switch is a change of server: what was learned from the previous one is learned again.
  std::uint64_t server_epoch() const override {
    return current_->server_epoch() + (generation_ << 40);
  }
  ServerSend send_to_server(std::string_view server, std::string_view command, int database,
                            std::size_t affinity, int protocol, std::uint64_t tag,
                            const std::shared_ptr<ReplyTarget>& target) override {
    return current_->send_to_server(server, command, database, affinity, protocol, tag, target);
  }
  void answer_info(std::string_view info_command, std::string corral_only, bool servers_wanted,
                   std::size_t affinity, std::uint64_t tag,
                   const std::shared_ptr<ReplyTarget>& merge,
                   const std::shared_ptr<ReplyTarget>& client) override {
    current_->answer_info(info_command, std::move(corral_only), servers_wanted, affinity, tag,
                          merge, client);
  }
  bool report_topology(std::string& reply) override { return current_->report_topology(reply); }
  int database() const override { return current_->database(); }
  std::shared_ptr<Link> open_own_link(int database, int protocol) override;
  std::optional<std::string> server_of_key(std::string_view key) override {
    return current_->server_of_key(key);
  }
  std::shared_ptr<Link> open_own_link_to(std::string_view server, int database,
                                         int protocol) override;
  // A caller that follows the switch: each conversation goes to the upstream in use when it starts.
  std::shared_ptr<KeyedCaller> keyed_caller(const KeyedCallerOptions& options) override;
  void fetch(std::span<const std::string_view> argv, std::string_view bytes, int database,
             const std::shared_ptr<ReplyTarget>& target) override {
    current_->fetch(argv, bytes, database, target);
  }
  void fetch_from_replica(std::span<const std::string_view> argv, std::string_view bytes,
                          int database, std::optional<std::chrono::steady_clock::time_point> seen,
                          const std::shared_ptr<ReplyTarget>& target) override {
    current_->fetch_from_replica(argv, bytes, database, seen, target);
  }
  UserUpstreamResult as_user(std::string_view user, std::string_view password,
                             int entered_database) override {
    return current_->as_user(user, password, entered_database);
  }

  // How many switches happened.
  std::uint64_t generation() const override { return generation_; }
  // The upstream in use (for the keyed caller that follows).
  Upstream& current() const { return *current_; }

 private:
  std::shared_ptr<Link> remember(std::shared_ptr<Link> link);

  std::shared_ptr<Upstream> current_;
  std::uint64_t generation_ = 0;
  // Links handed out by the upstream in use: a switch moves them to previous_links_.
  std::vector<std::weak_ptr<Link>> links_;
  struct Previous {
    std::uint64_t generation;  // while it was in use
    std::shared_ptr<Upstream> upstream;
    std::vector<std::weak_ptr<Link>> links;
  };
  std::vector<Previous> previous_;
};

}  // namespace corral::upstream
