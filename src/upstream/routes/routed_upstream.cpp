// Routing each command by its keys' prefix, partitions numbered per upstream, and the parts of
// the interface that concern one server (INFO, COMMAND, topology) answered by the default.
#include "upstream/routes/routed_upstream.hpp"

#include "resp/ascii.hpp"
#include "resp/encoder.hpp"
#include "upstream/cluster/cluster_merge.hpp"
#include "upstream/errors.hpp"
#include "upstream/routes/route_link.hpp"
#include "upstream/routes/routed_caller.hpp"

namespace corral::upstream {

namespace {

constexpr std::string_view kErrCrossUpstream =
    "CROSSSLOT Keys in request don't hash to the same slot or go to different upstreams "
    "(routes:)";

// One part of a split fill: answers the merge under the part's number.
class PartTarget final : public ReplyTarget {
 public:
  PartTarget(std::shared_ptr<ReplyTarget> merge, std::size_t part)
      : merge_(std::move(merge)), part_(part) {}
  void on_reply(std::uint64_t, std::string_view reply) override { merge_->on_reply(part_, reply); }
  void on_failure(std::uint64_t, std::string_view error) override {
    merge_->on_failure(part_, error);
  }

 private:
  std::shared_ptr<ReplyTarget> merge_;
  std::size_t part_;
};

// Keyless commands that every upstream runs (the others go to the default one): a pause for a
// failover stops the writes of every upstream, as CLIENT PAUSE stops every primary of a cluster.
constexpr std::string_view kEveryUpstream[] = {"client|pause", "client|unpause"};

bool runs_on_every_upstream(std::string_view name) {
  for (const auto every : kEveryUpstream) {
    if (every == name) return true;
  }
  return false;
}

}  // namespace

RoutedUpstream::RoutedUpstream(Parts parts) : parts_(std::move(parts)) {}

std::size_t RoutedUpstream::upstream_of(const Routed& command) {
  command.shape.find_keys(command.argv, keys_);
  if (keys_.empty()) return kKeyless;
  const auto& routes = *parts_.routes;
  const std::size_t first = routes.upstream_of(command.argv[keys_.front()]);
  for (std::size_t i = 1; i < keys_.size(); ++i) {
    if (routes.upstream_of(command.argv[keys_[i]]) != first) return kSpansUpstreams;
  }
  return first;
}

Routed RoutedUpstream::on(std::size_t upstream, const Routed& command) const {
  return {command.shape,    command.argv,    command.bytes, database_on(upstream, command.database),
          command.affinity, command.protocol};
}

bool RoutedUpstream::send(const Routed& command, std::uint64_t tag,
                          const std::shared_ptr<ReplyTarget>& target) {
  std::size_t upstream = upstream_of(command);
  if (upstream == kSpansUpstreams) {
    parts_.counters->cross_upstream_refused.fetch_add(1, std::memory_order_relaxed);
    std::string error;
    resp::append_error(error, kErrCrossUpstream);
    target->on_reply(tag, error);
    return true;
  }
  // The mirror is found before the send, from this command's keys: keys_ is scratch space.
  RouteMirror* mirror = nullptr;
  if (upstream == kKeyless && runs_on_every_upstream(command.shape.name())) {
    send_to_every_upstream(command, tag, target);
    return true;
  }
  if (upstream == kKeyless) {
    upstream = kDefaultUpstream;
  } else if (const KeyRoute* route = parts_.routes->find(command.argv[keys_.front()])) {
    mirror = parts_.mirrors[static_cast<std::size_t>(route - parts_.routes->routes().data())].get();
  }
  const Routed routed = on(upstream, command);
  if (!parts_.upstreams[upstream]->send(routed, tag, target)) return false;
  parts_.counters->commands[upstream].fetch_add(1, std::memory_order_relaxed);
  if (mirror != nullptr) mirror->copy(routed);
  return true;
}

void RoutedUpstream::send_to_every_upstream(const Routed& command, std::uint64_t tag,
                                            const std::shared_ptr<ReplyTarget>& target) {
  const std::size_t count = parts_.upstreams.size();
  auto merged = std::make_shared<ClusterMergeTarget>(
      ClusterMerge::all_ok, count, std::vector<std::vector<std::size_t>>{}, target, tag);
  for (std::size_t upstream = 0; upstream < count; ++upstream) {
    // Each part answers the merge under its own number as tag.
    if (parts_.upstreams[upstream]->send(on(upstream, command), upstream,
                                         std::make_shared<PartTarget>(merged, upstream))) {
      parts_.counters->commands[upstream].fetch_add(1, std::memory_order_relaxed);
    } else {
      merged->on_failure(upstream, kErrUnavailable);
    }
  }
}

int RoutedUpstream::partition_of(const Routed& command) {
  const std::size_t upstream = upstream_of(command);
  if (upstream == kKeyless) return kAnyPartition;
  if (upstream == kSpansUpstreams) {
    last_span_ = kSpansUpstreams;
    return kSpansPartitions;
  }
  const int inner = parts_.upstreams[upstream]->partition_of(on(upstream, command));
  if (inner == kSpansPartitions) {
    last_span_ = upstream;
    return kSpansPartitions;
  }
  // kAnyPartition (-1) and slots 0..16383 -> 0..16384 within the upstream's block.
  return static_cast<int>(upstream) * kPartitionsPerUpstream + inner + 1;
}

bool RoutedUpstream::link_serves(int link_partition, int partition, bool subscribes) {
  const auto upstream_of_partition = [](int p) {
    return p < 0 ? kDefaultUpstream : static_cast<std::size_t>(p / kPartitionsPerUpstream);
  };
  const std::size_t link = upstream_of_partition(link_partition);
  bool serves = true;
  if (partition == kSpansPartitions) {
    serves = last_span_ == link;  // spanning one upstream's slots: that upstream refuses it
  } else if (partition != kAnyPartition) {
    serves = upstream_of_partition(partition) == link;
  } else if (subscribes) {
    serves = link == kDefaultUpstream;  // PUBLISH is keyless: it goes to the default upstream
  }
  if (!serves) last_span_ = kSpansUpstreams;  // counted as a refusal across upstreams
  return serves;
}

SessionLinkResult RoutedUpstream::open_session_link(int partition, const Routed& command) {
  std::size_t upstream = kDefaultUpstream;
  int inner = kAnyPartition;
  if (partition >= 0) {
    upstream = static_cast<std::size_t>(partition / kPartitionsPerUpstream);
    inner = partition % kPartitionsPerUpstream - 1;
  }
  auto opened = parts_.upstreams[upstream]->open_session_link(inner, on(upstream, command));
  if (!opened.link) return opened;
  const int own_database = upstream == kDefaultUpstream ? RouteLink::kClientsDatabase
                                                        : parts_.upstreams[upstream]->database();
  return {std::make_shared<RouteLink>(std::move(opened.link), upstream, parts_.qualifiers[upstream],
                                      own_database)};
}

void RoutedUpstream::recycle_session_link(std::shared_ptr<Link> link, int database, int protocol) {
  // Every link this upstream hands out is a RouteLink (the contract: links it opened).
  auto& routed = static_cast<RouteLink&>(*link);
  const std::size_t upstream = routed.upstream();
  parts_.upstreams[upstream]->recycle_session_link(routed.inner(), database_on(upstream, database),
                                                   protocol);
}

void RoutedUpstream::note_cross_partition_refusal() {
  if (last_span_ != kSpansUpstreams) {
    parts_.upstreams[last_span_]->note_cross_partition_refusal();
  } else {
    parts_.counters->cross_upstream_refused.fetch_add(1, std::memory_order_relaxed);
  }
}

std::string_view RoutedUpstream::cross_partition_error() const { return kErrCrossUpstream; }

bool RoutedUpstream::send_out_of_band(const Routed& command, std::uint64_t tag,
                                      const std::shared_ptr<ReplyTarget>& target) {
  std::size_t upstream = upstream_of(command);
  if (upstream == kKeyless || upstream == kSpansUpstreams) upstream = kDefaultUpstream;
  return parts_.upstreams[upstream]->send_out_of_band(on(upstream, command), tag, target);
}

ServerSend RoutedUpstream::send_to_server(std::string_view server, std::string_view command,
                                          int database, std::size_t affinity, int protocol,
                                          std::uint64_t tag,
                                          const std::shared_ptr<ReplyTarget>& target) {
  const auto [upstream, inner] = split_qualified(parts_.qualifiers, server);
  return parts_.upstreams[upstream]->send_to_server(inner, command, database_on(upstream, database),
                                                    affinity, protocol, tag, target);
}

std::optional<std::string> RoutedUpstream::server_of_key(std::string_view key) {
  const std::size_t upstream = parts_.routes->upstream_of(key);
  auto server = parts_.upstreams[upstream]->server_of_key(key);
  if (!server) return server;
  return parts_.qualifiers[upstream] + *server;
}

std::shared_ptr<Link> RoutedUpstream::open_own_link_to(std::string_view server, int database,
                                                       int protocol) {
  const auto [upstream, inner] = split_qualified(parts_.qualifiers, server);
  return parts_.upstreams[upstream]->open_own_link_to(inner, database_on(upstream, database),
                                                      protocol);
}

std::shared_ptr<KeyedCaller> RoutedUpstream::keyed_caller(const KeyedCallerOptions& options) {
  std::vector<std::shared_ptr<KeyedCaller>> callers;
  for (const auto& upstream : parts_.upstreams) callers.push_back(upstream->keyed_caller(options));
  return make_routed_caller(parts_.routes, std::move(callers), parts_.qualifiers);
}

void RoutedUpstream::fetch(std::span<const std::string_view> argv, std::string_view bytes,
                           int database, const std::shared_ptr<ReplyTarget>& target) {
  fetch_from_replica(argv, bytes, database, std::nullopt, target);
}

void RoutedUpstream::fetch_from_replica(std::span<const std::string_view> argv,
                                        std::string_view bytes, int database,
                                        std::optional<std::chrono::steady_clock::time_point> seen,
                                        const std::shared_ptr<ReplyTarget>& target) {
  const auto& routes = *parts_.routes;
  const std::size_t upstream = argv.size() > 1 ? routes.upstream_of(argv[1]) : kDefaultUpstream;
  if (resp::iequals(argv[0], "mget")) {
    for (std::size_t i = 2; i < argv.size(); ++i) {
      if (routes.upstream_of(argv[i]) != upstream) return fetch_split(argv, database, target);
    }
  }
  parts_.upstreams[upstream]->fetch_from_replica(argv, bytes, database_on(upstream, database), seen,
                                                 target);
}

void RoutedUpstream::fetch_split(std::span<const std::string_view> argv, int database,
                                 const std::shared_ptr<ReplyTarget>& target) {
  std::vector<std::size_t> upstreams;
  std::vector<std::vector<std::size_t>> members;  // per part: the keys' positions in the reply
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::size_t upstream = parts_.routes->upstream_of(argv[i]);
    std::size_t part = 0;
    while (part < upstreams.size() && upstreams[part] != upstream) ++part;
    if (part == upstreams.size()) {
      upstreams.push_back(upstream);
      members.emplace_back();
    }
    members[part].push_back(i - 1);
  }
  auto merged = std::make_shared<ClusterMergeTarget>(ClusterMerge::values_in_key_order,
                                                     upstreams.size(), members, target, 0);
  std::vector<std::string_view> sub;
  for (std::size_t part = 0; part < upstreams.size(); ++part) {
    sub.assign(1, argv[0]);
    for (const std::size_t k : members[part]) sub.push_back(argv[k + 1]);
    std::string command;
    resp::append_command(command, sub);
    const std::size_t upstream = upstreams[part];
    // Each part answers the merge under its own number as tag.
    parts_.upstreams[upstream]->fetch(sub, command, database_on(upstream, database),
                                      std::make_shared<PartTarget>(merged, part));
  }
}

UserUpstreamResult RoutedUpstream::as_user(std::string_view user, std::string_view password,
                                           int entered_database) {
  Parts parts = parts_;
  for (std::size_t i = 0; i < parts.upstreams.size(); ++i) {
    auto result = parts_.upstreams[i]->as_user(
        user, password, i == kDefaultUpstream ? entered_database : parts_.upstreams[i]->database());
    if (!result.upstream) return result;
    parts.upstreams[i] = std::move(result.upstream);
  }
  // The user's commands are mirrored as Corral's own upstream user: the mirror is Corral's copy.
  return {std::make_shared<RoutedUpstream>(std::move(parts)), UserUpstreamRefusal::none};
}

}  // namespace corral::upstream
