// Cluster routing of shared-connection requests: the slot from the key specs, then one of the
// routes of cluster_routes.hpp.
#include "proxy/cluster_router.hpp"

#include <algorithm>
#include <string>

#include "proxy/cluster_scan.hpp"
#include "proxy/node_bound_link.hpp"
#include "resp/encoder.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/cluster_merge.hpp"
#include "upstream/cluster/cluster_split.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::proxy {

namespace {
// The key step of a split command: 2 for MSET's key value pairs, else 1.
std::size_t argument_group(const CommandSpec& row) {
  return row.key_step > 1 ? static_cast<std::size_t>(row.key_step) : 1;
}
}  // namespace

ClusterRouter::ClusterRouter(upstream::ClusterLinks& links,
                             const config::UpstreamSettings& settings)
    : links_(links),
      settings_(settings),
      fast_path_(std::make_shared<upstream::ClusterFastPath>(links)) {}

int ClusterRouter::slot_of(const CommandSpec& row, std::span<const std::string_view> argv) {
  key_indices(row, argv, keys_);
  if (keys_.empty()) return -1;
  const int slot = upstream::key_slot(argv[keys_.front()]);
  for (std::size_t i = 1; i < keys_.size(); ++i) {
    if (upstream::key_slot(argv[keys_[i]]) != slot) return -2;
  }
  return slot;
}

int ClusterRouter::clusterdown_retries() const {
  return static_cast<int>(std::max<std::int64_t>(1, settings_.command_timeout.count() / 100));
}

// Before the first slot map (start-up, or every node unreachable so far) a request waits for one,
// a little longer than one refresh attempt on a hanging seed takes, instead of failing at once.
void ClusterRouter::send_when_mapped(const ClientState& client, const CommandSpec& row,
                                     std::span<const std::string_view> argv, std::string_view bytes,
                                     std::uint64_t tag,
                                     const std::shared_ptr<upstream::ReplyTarget>& target,
                                     int waited) {
  constexpr std::chrono::milliseconds kPoll{50};
  const auto limit = settings_.connect_timeout + 2 * settings_.command_timeout;
  if (waited * kPoll >= limit) {
    links_.request_refresh(upstream::RefreshReason::clusterdown);
    const auto failure = links_.map_failure();
    if (failure.empty()) return target->on_failure(tag, upstream::kErrSlotUnserved);
    return target->on_failure(tag, upstream::slot_unserved_error(failure));
  }
  struct Held {
    std::vector<std::string> words;
    std::string bytes;
  };
  auto held = std::make_shared<Held>(Held{{argv.begin(), argv.end()}, std::string(bytes)});
  links_.run_after(
      kPoll, [this, held, &row, tag, target, waited, id = client.id, protocol = client.protocol] {
        ClientState again;
        again.id = id;
        again.protocol = protocol;
        const std::vector<std::string_view> view(held->words.begin(), held->words.end());
        if (links_.routes().primaries.empty()) {
          return send_when_mapped(again, row, view, held->bytes, tag, target, waited + 1);
        }
        send(again, row, view, held->bytes, tag, target);
      });
}

void ClusterRouter::send(const ClientState& client, const CommandSpec& row,
                         std::span<const std::string_view> argv, std::string_view bytes,
                         std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target) {
  if (links_.routes().primaries.empty()) {
    return send_when_mapped(client, row, argv, bytes, tag, target, 0);
  }
  const int slot = slot_of(row, argv);
  if (slot >= 0) return send_keyed(client, row, bytes, slot, tag, target);
  const ClusterRouteRow* route = find_cluster_route(row.name);
  if (slot == -2) {
    if (route && route->route == ClusterRoute::split_by_slot)
      return split(client, row, *route, argv, tag, target);
    links_.counters().crossslot_refused.fetch_add(1, std::memory_order_relaxed);
    std::string error;
    resp::append_error(error, kErrCrossSlot);
    return target->on_reply(tag, error);
  }
  const auto& primaries = links_.routes().primaries;
  if (primaries.empty()) {
    links_.request_refresh(upstream::RefreshReason::clusterdown);
    return target->on_failure(tag, upstream::kErrSlotUnserved);
  }
  const ClusterRoute kind = route ? route->route : ClusterRoute::any_primary;
  switch (kind) {
    case ClusterRoute::all_primaries:
      return fan_out(client, *route, bytes, tag, target);
    case ClusterRoute::scan:
      return scan(client, argv, tag, target);
    case ClusterRoute::random_primary:
      random_ = random_ * 6364136223846793005ull + 1442695040888963407ull;
      return to_node(client, primaries[(random_ >> 33) % primaries.size()], bytes, tag, target);
    default:
      return to_node(client, primaries[client.id % primaries.size()], bytes, tag, target);
  }
}

// What every command routed by its keys' slot carries: redirects and CLUSTERDOWN are followed,
// reads may go to replicas as read_from says.
upstream::ClusterCommandOptions ClusterRouter::keyed_options(const ClientState& client,
                                                             const CommandSpec& row) const {
  upstream::ClusterCommandOptions options;
  options.read_only = (row.flags & kReadOnly) != 0;
  options.affinity = client.id;
  options.protocol = client.protocol;
  options.max_redirects = settings_.max_redirects;
  options.clusterdown_retries = clusterdown_retries();
  options.read_from = settings_.read_from;
  return options;
}

void ClusterRouter::send_keyed(const ClientState& client, const CommandSpec& row,
                               std::string_view bytes, int slot, std::uint64_t tag,
                               const std::shared_ptr<upstream::ReplyTarget>& target) {
  upstream::ClusterCommandOptions options = keyed_options(client, row);
  options.slot = slot;
  // The common case needs no redirect-following object: the slot's primary is known, healthy and
  // connected. Anything else (a replica read, a failing primary, a connection backing off) takes
  // the ClusterCommand, as does a redirect reply to a command sent here.
  auto& routes = links_.routes();
  const int owner = routes.owner[slot];
  if (owner >= 0 && routes.nodes[owner].healthy &&
      (!options.read_only || options.read_from == config::ReadFrom::primary)) {
    auto& link = links_.node_link(owner, options.affinity, options.protocol);
    if (link.state() == upstream::Link::State::ready &&
        fast_path_->send(link, bytes, options, target, tag)) {
      return;
    }
  }
  std::make_shared<upstream::ClusterCommand>(links_, std::string(bytes), options, target, tag)
      ->start();
}

void ClusterRouter::to_node(const ClientState& client, int node, std::string_view bytes,
                            std::uint64_t tag,
                            const std::shared_ptr<upstream::ReplyTarget>& target) {
  upstream::ClusterCommandOptions options;
  options.node = node;
  options.affinity = client.id;
  options.protocol = client.protocol;
  std::make_shared<upstream::ClusterCommand>(links_, std::string(bytes), options, target, tag)
      ->start();
}

void ClusterRouter::split(const ClientState& client, const CommandSpec& row,
                          const ClusterRouteRow& route, std::span<const std::string_view> argv,
                          std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target) {
  upstream::send_split_by_slot(links_, argv, keys_, argument_group(row), route.merge,
                               keyed_options(client, row), target, tag);
}

void ClusterRouter::fan_out(const ClientState& client, const ClusterRouteRow& route,
                            std::string_view bytes, std::uint64_t tag,
                            const std::shared_ptr<upstream::ReplyTarget>& target) {
  const std::vector<int> primaries = links_.routes().primaries;
  auto merge = std::make_shared<upstream::ClusterMergeTarget>(
      route.merge, primaries.size(), std::vector<std::vector<std::size_t>>{}, target, tag);
  for (std::size_t part = 0; part < primaries.size(); ++part) {
    upstream::ClusterCommandOptions options;
    options.node = primaries[part];
    options.affinity = client.id;
    options.protocol = client.protocol;
    std::make_shared<upstream::ClusterCommand>(links_, std::string(bytes), options, merge, part)
        ->start();
  }
}

std::uint16_t ClusterRouter::fingerprint() {
  const auto& routes = links_.routes();
  std::vector<config::Endpoint> endpoints;
  for (int p : routes.primaries) endpoints.push_back(routes.nodes[p].endpoint);
  return primaries_fingerprint(endpoints);
}

void ClusterRouter::scan(const ClientState& client, std::span<const std::string_view> argv,
                         std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target) {
  auto cursor = ClusterScanCursor::decode(argv[1]);
  if (!cursor) return target->on_failure(tag, "ERR invalid cursor");
  const auto& primaries = links_.routes().primaries;
  const std::uint16_t current = fingerprint();
  if (argv[1] == "0") {
    cursor->fingerprint = current;
  } else if (cursor->fingerprint != current || cursor->node >= primaries.size()) {
    return target->on_failure(tag, kErrScanTopologyChanged);
  }
  const std::string node_cursor = std::to_string(cursor->node_cursor);
  std::vector<std::string_view> sub(argv.begin(), argv.end());
  sub[1] = node_cursor;
  std::string command;
  resp::append_command(command, sub);
  auto rewrite = std::make_shared<ClusterScanTarget>(*cursor, primaries.size(), target);
  to_node(client, primaries[cursor->node], command, tag, rewrite);
}

std::shared_ptr<upstream::Link> ClusterRouter::dedicated_for_slot(int slot, std::size_t affinity,
                                                                  int protocol) {
  auto& routes = links_.routes();
  int node = -1;
  if (slot >= 0) {
    node = routes.owner[slot];
  } else if (!routes.primaries.empty()) {
    node = routes.primaries[affinity % routes.primaries.size()];
  }
  if (node < 0) {
    links_.request_refresh(upstream::RefreshReason::clusterdown);
    return nullptr;
  }
  auto connection = links_.dedicated_node_link(node, protocol);
  if (!connection) return nullptr;
  return std::make_shared<NodeBoundLink>(*this, std::move(connection), node, protocol);
}

}  // namespace corral::proxy
