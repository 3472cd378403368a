// A Redis Cluster behind the Upstream interface. Commands that concern the server as a whole go
// to the cluster, never to the first seed: SCRIPT KILL to every primary, COMMAND and INFO to the
// first primary that answers.
#include "upstream/cluster/cluster_upstream.hpp"

#include <boost/asio/post.hpp>

#include "config/values.hpp"
#include "resp/ascii.hpp"
#include "resp/encoder.hpp"
#include "upstream/cluster/cluster_admin.hpp"
#include "upstream/cluster/cluster_caller.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/cluster_merge.hpp"
#include "upstream/cluster/cluster_scan.hpp"
#include "upstream/cluster/cluster_split.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/out_of_band.hpp"
#include "upstream/user_pools.hpp"

namespace corral::upstream {

namespace {

// 100 ms apart: 8 s, longer than a failover with the usual cluster-node-timeout of a few seconds.
constexpr int kFailoverRetries = 80;

// A question for any primary: a failure (the node is down or unreachable) asks the next one; the
// first answer, even an error reply, is the answer. Primaries are the nodes of this thread's map
// when asked, by address, so a map refresh meanwhile does not skip or repeat one.
class AnyPrimary final : public ReplyTarget, public std::enable_shared_from_this<AnyPrimary> {
 public:
  AnyPrimary(ClusterLinks& links, std::string command, std::shared_ptr<ReplyTarget> target)
      : links_(links), command_(std::move(command)), target_(std::move(target)) {
    // Connected primaries first: one still connecting (or down) is asked only after them.
    const auto& routes = links_.routes();
    for (const bool ready : {true, false}) {
      for (const int p : routes.primaries) {
        if ((links_.node_link(p, 0, 2).state() == Link::State::ready) != ready) continue;
        primaries_.push_back(config::format_endpoint(routes.nodes[p].endpoint));
      }
    }
  }

  // False when no primary could take the command (nobody was told).
  bool start(std::uint64_t tag) { return send_next(tag); }

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    target_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    on_error(tag, ErrorKind::connection_lost, error);
  }
  void on_error(std::uint64_t tag, ErrorKind kind, std::string_view error) override {
    last_kind_ = kind;
    last_error_ = error;
    if (!send_next(tag)) target_->on_error(tag, last_kind_, last_error_);
  }

 private:
  bool send_next(std::uint64_t tag) {
    while (next_ < primaries_.size()) {
      const int node = find_node(primaries_[next_++]);
      if (node < 0) continue;
      if (links_.node_link(node, 0, 2).send(command_, shared_from_this(), tag)) return true;
    }
    return false;
  }
  int find_node(const std::string& name) const {
    const auto& nodes = links_.routes().nodes;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (config::format_endpoint(nodes[i].endpoint) == name) return static_cast<int>(i);
    }
    return -1;
  }

  ClusterLinks& links_;
  std::string command_;
  std::shared_ptr<ReplyTarget> target_;
  std::vector<std::string> primaries_;
  std::size_t next_ = 0;
  ErrorKind last_kind_ = ErrorKind::upstream_unavailable;
  std::string last_error_{kErrUnavailable};
};

}  // namespace

SessionLinkResult ClusterUpstream::open_session_link(int partition, const Routed& command) {
  auto& routes = links_.routes();
  bool wait = false;
  if (partition < 0) {
    // A keyless session (SUBSCRIBE, SYNC) takes any primary, and before the first slot map (a
    // Corral just started) there is none yet to take.
    wait = routes.primaries.empty();
  } else {
    // The slot's primary is failing or the slot has no owner yet: a link opened now would die
    // with it.
    const int owner = routes.owner.empty() ? -1 : routes.owner[partition];
    wait = owner < 0 || !routes.nodes[owner].healthy;
  }
  if (wait) {
    // Nothing was sent, so the caller may wait for the map or the promoted replica.
    links_.request_refresh(RefreshReason::clusterdown);
    return {nullptr, ErrorKind::failing_over};
  }
  return {router_.dedicated_for_slot(partition, command.affinity, command.protocol)};
}

void ClusterUpstream::note_cross_partition_refusal() {
  links_.counters().crossslot_refused.fetch_add(1, std::memory_order_relaxed);
}

bool ClusterUpstream::send_out_of_band(const Routed& command, std::uint64_t tag,
                                       const std::shared_ptr<ReplyTarget>& target) {
  // A primary the map knows to be failing is not asked: its replica takes its place.
  const auto& routes = links_.routes();
  std::vector<int> primaries;
  for (const int p : routes.primaries) {
    if (routes.nodes[p].healthy) primaries.push_back(p);
  }
  const ClusterRouteRow* route = find_cluster_route(command.shape.name());
  if (route != nullptr && route->route == ClusterRoute::refused) {
    target->on_failure(tag, kErrRefusedOnCluster);
    return true;
  }
  if (primaries.empty()) return false;
  if (route == nullptr || route->route != ClusterRoute::all_primaries) {
    const int node = primaries[command.affinity % primaries.size()];
    return send_once(links_.dedicated_node_link(node, 2), command.bytes, target, tag);
  }
  auto merge = std::make_shared<ClusterMergeTarget>(
      route->merge, primaries.size(), std::vector<std::vector<std::size_t>>{}, target, tag);
  for (std::size_t part = 0; part < primaries.size(); ++part) {
    // A primary without a connection answers for itself, later, as the merge's contract wants.
    if (!send_once(links_.dedicated_node_link(primaries[part], 2), command.bytes, merge, part)) {
      boost::asio::post(executor_, [merge, part] { merge->on_failure(part, kErrUnavailable); });
    }
  }
  return true;
}

bool ClusterUpstream::ask_server(std::string_view command, std::uint64_t tag,
                                 const std::shared_ptr<ReplyTarget>& target) {
  return std::make_shared<AnyPrimary>(links_, std::string(command), target)->start(tag);
}

boost::asio::awaitable<CallResult> ClusterUpstream::call_server(std::string command) {
  const CommandSender sender = [this](std::string_view bytes, std::shared_ptr<ReplyTarget> target,
                                      std::uint64_t tag) { return ask_server(bytes, tag, target); };
  co_return co_await call(sender, command);
}

std::uint64_t ClusterUpstream::server_epoch() const {
  const auto& routes = links_.routes();
  std::vector<config::Endpoint> endpoints;
  for (const int p : routes.primaries) endpoints.push_back(routes.nodes[p].endpoint);
  return primaries_fingerprint(endpoints);
}

ServerSend ClusterUpstream::send_to_server(std::string_view server, std::string_view command, int,
                                           std::size_t affinity, int protocol, std::uint64_t tag,
                                           const std::shared_ptr<ReplyTarget>& target) {
  // Node indexes are per io thread: the node is found again by its address in this thread's map.
  const auto& nodes = links_.routes().nodes;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (config::format_endpoint(nodes[i].endpoint) != server) continue;
    auto& link = links_.node_link(static_cast<int>(i), affinity, protocol);
    return link.send(command, target, tag) ? ServerSend::sent : ServerSend::unavailable;
  }
  return ServerSend::no_such_server;
}

void ClusterUpstream::answer_info(std::string_view, std::string corral_only, bool servers_wanted,
                                  std::size_t affinity, std::uint64_t tag,
                                  const std::shared_ptr<ReplyTarget>&,
                                  const std::shared_ptr<ReplyTarget>& client) {
  if (servers_wanted)
    return answer_cluster_info(links_, std::move(corral_only), affinity, client, tag);
  std::string out;
  resp::append_bulk(out, corral_only);
  client->on_reply(tag, out);
}

bool ClusterUpstream::report_topology(std::string& reply) {
  append_cluster_report(reply, links_);
  return true;
}

std::shared_ptr<KeyedCaller> ClusterUpstream::keyed_caller(const KeyedCallerOptions& options) {
  return make_cluster_caller(executor_, links_, options, settings_.max_redirects);
}

// The cached commands are GET-like (the key first) or MGET; a cluster command may answer at once
// (no node for the slot), so it starts from the event loop, as the fetch contract requires.
void ClusterUpstream::fetch(std::span<const std::string_view> argv, std::string_view bytes, int,
                            const std::shared_ptr<ReplyTarget>& target) {
  send_fill(argv, bytes, {}, target);
}

void ClusterUpstream::fetch_from_replica(std::span<const std::string_view> argv,
                                         std::string_view bytes, int,
                                         std::optional<std::chrono::steady_clock::time_point> seen,
                                         const std::shared_ptr<ReplyTarget>& target) {
  ClusterCommandOptions::ReplicaFill replica_fill;
  replica_fill.wanted = true;
  replica_fill.seen = seen;
  send_fill(argv, bytes, replica_fill, target);
}

void ClusterUpstream::send_fill(std::span<const std::string_view> argv, std::string_view bytes,
                                ClusterCommandOptions::ReplicaFill replica_fill,
                                const std::shared_ptr<ReplyTarget>& target) {
  ClusterCommandOptions options;
  options.read_only = true;
  options.replica_fill = replica_fill;
  options.max_redirects = settings_.max_redirects;
  // A fetch waits out a failover (its clients are served stale meanwhile, when grace allows).
  options.unreachable_retries = kFailoverRetries;
  options.clusterdown_retries = kFailoverRetries;
  if (argv.size() > 2 && resp::iequals(argv[0], "mget")) {
    std::vector<std::string> words(argv.begin(), argv.end());
    boost::asio::post(executor_, [this, target, words = std::move(words), options] {
      std::vector<std::string_view> view(words.begin(), words.end());
      std::vector<std::size_t> keys(view.size() - 1);
      for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = i + 1;
      send_split_by_slot(links_, view, keys, 1, ClusterMerge::values_in_key_order, options, target,
                         0);
    });
    return;
  }
  options.slot = argv.size() > 1 ? key_slot(argv[1]) : 0;
  auto command = std::make_shared<ClusterCommand>(links_, std::string(bytes), options, target, 0);
  boost::asio::post(executor_, [command] { command->start(); });
}

std::shared_ptr<Link> ClusterUpstream::open_own_link(int, int) {
  return nullptr;  // one server per slot: no single connection sees every key
}

// This thread's routing view decides, as it does for the key's commands: a fill then reads the
// node its clients' writes go to, and a MOVED it answers is absorbed by the caller's routed path.
std::optional<std::string> ClusterUpstream::server_of_key(std::string_view key) {
  const auto& routes = links_.routes();
  const auto slot = key_slot(key);
  if (routes.owner.size() <= slot || routes.owner[slot] < 0) return std::nullopt;
  return config::format_endpoint(routes.nodes[routes.owner[slot]].endpoint);
}

std::shared_ptr<Link> ClusterUpstream::open_own_link_to(std::string_view server, int,
                                                        int protocol) {
  const auto& nodes = links_.routes().nodes;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (config::format_endpoint(nodes[i].endpoint) == server) {
      return links_.dedicated_node_link(static_cast<int>(i), protocol);
    }
  }
  return nullptr;
}

UserUpstreamResult ClusterUpstream::as_user(std::string_view user, std::string_view password,
                                            int entered_database) {
  if (users_ == nullptr) return {};
  return users_->acquire(user, password, entered_database);
}

}  // namespace corral::upstream
