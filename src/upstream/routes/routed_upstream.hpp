// The Upstream when `routes:` sends key prefixes to named upstreams: each keyed command goes to
// the upstream of its keys' route (a command whose keys span routes is refused like CROSSSLOT),
// keyless ones and questions about the server to the default upstream, and a route's commands
// are copied to its mirror. Each routed upstream is any kind (one Redis, a cluster, a Sentinel).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "upstream/routes/route_mirror.hpp"
#include "upstream/routes/route_table.hpp"
#include "upstream/upstream.hpp"

namespace corral::upstream {

// One io thread's counts, read by /metrics from another thread.
struct RouteThreadCounters {
  explicit RouteThreadCounters(std::size_t upstreams) : commands(upstreams) {}
  std::vector<std::atomic<std::uint64_t>> commands;  // client commands sent, per upstream
  std::atomic<std::uint64_t> cross_upstream_refused{0};
};

// How a partition of a routed upstream is numbered: an upstream's own partitions (kAnyPartition
// and a cluster's 16384 slots) shifted into a block of their own per upstream.
inline constexpr int kPartitionsPerUpstream = 16385;

class RoutedUpstream final : public Upstream {
 public:
  struct Parts {
    std::shared_ptr<const RouteTable> routes;
    std::vector<std::shared_ptr<Upstream>> upstreams;  // [kDefaultUpstream] is the default
    std::vector<std::string> qualifiers;               // "" for the default, "name/" for others
    // Per route of `routes` (same order), its mirror on this thread; null without one.
    std::vector<std::shared_ptr<RouteMirror>> mirrors;
    std::shared_ptr<RouteThreadCounters> counters;
  };
  explicit RoutedUpstream(Parts parts);

  bool send(const Routed& command, std::uint64_t tag,
            const std::shared_ptr<ReplyTarget>& target) override;
  bool partitioned() const override { return true; }
  bool selects_databases() const override { return default_upstream().selects_databases(); }
  int partition_of(const Routed& command) override;
  bool link_serves(int link_partition, int partition, bool subscribes) override;
  SessionLinkResult open_session_link(int partition, const Routed& command) override;
  void recycle_session_link(std::shared_ptr<Link> link, int database, int protocol) override;
  void note_cross_partition_refusal() override;
  std::string_view cross_partition_error() const override;
  bool send_out_of_band(const Routed& command, std::uint64_t tag,
                        const std::shared_ptr<ReplyTarget>& target) override;
  bool ask_server(std::string_view command, std::uint64_t tag,
                  const std::shared_ptr<ReplyTarget>& target) override {
    return default_upstream().ask_server(command, tag, target);
  }
  boost::asio::awaitable<CallResult> call_server(std::string command) override {
    return default_upstream().call_server(std::move(command));
  }
  std::uint64_t server_epoch() const override { return default_upstream().server_epoch(); }
  ServerSend send_to_server(std::string_view server, std::string_view command, int database,
                            std::size_t affinity, int protocol, std::uint64_t tag,
                            const std::shared_ptr<ReplyTarget>& target) override;
  void answer_info(std::string_view info_command, std::string corral_only, bool servers_wanted,
                   std::size_t affinity, std::uint64_t tag,
                   const std::shared_ptr<ReplyTarget>& merge,
                   const std::shared_ptr<ReplyTarget>& client) override {
    default_upstream().answer_info(info_command, std::move(corral_only), servers_wanted, affinity,
                                   tag, merge, client);
  }
  bool report_topology(std::string& reply) override {
    return default_upstream().report_topology(reply);
  }
  // Keys live on several upstreams: per-server links only (open_own_link_to).
  std::shared_ptr<Link> open_own_link(int, int) override { return nullptr; }
  std::optional<std::string> server_of_key(std::string_view key) override;
  std::shared_ptr<Link> open_own_link_to(std::string_view server, int database,
                                         int protocol) override;
  int database() const override { return default_upstream().database(); }
  std::shared_ptr<KeyedCaller> keyed_caller(const KeyedCallerOptions& options) override;
  void fetch(std::span<const std::string_view> argv, std::string_view bytes, int database,
             const std::shared_ptr<ReplyTarget>& target) override;
  void fetch_from_replica(std::span<const std::string_view> argv, std::string_view bytes,
                          int database, std::optional<std::chrono::steady_clock::time_point> seen,
                          const std::shared_ptr<ReplyTarget>& target) override;
  UserUpstreamResult as_user(std::string_view user, std::string_view password,
                             int entered_database) override;

 private:
  static constexpr std::size_t kSpansUpstreams = static_cast<std::size_t>(-1);
  static constexpr std::size_t kKeyless = static_cast<std::size_t>(-2);

  Upstream& default_upstream() const { return *parts_.upstreams[kDefaultUpstream]; }
  // The upstream every key of the command is routed to, kKeyless or kSpansUpstreams.
  std::size_t upstream_of(const Routed& command);
  // The command as `upstream` runs it: a named upstream's commands run in its own database.
  Routed on(std::size_t upstream, const Routed& command) const;
  int database_on(std::size_t upstream, int database) const {
    return upstream == kDefaultUpstream ? database : parts_.upstreams[upstream]->database();
  }
  // A keyless command every upstream runs (CLIENT PAUSE): +OK when each answered OK.
  void send_to_every_upstream(const Routed& command, std::uint64_t tag,
                              const std::shared_ptr<ReplyTarget>& target);
  // MGET fills whose keys span routes: one per upstream, merged in key order.
  void fetch_split(std::span<const std::string_view> argv, int database,
                   const std::shared_ptr<ReplyTarget>& target);

  Parts parts_;
  std::vector<std::size_t> keys_;  // scratch for find_keys
  // The last partition_of() that spanned: inside one upstream (its index) or across them.
  std::size_t last_span_ = kSpansUpstreams;
};

}  // namespace corral::upstream
