// Cluster routing of shared-connection requests: the slot from the command's keys, then one of
// the routes of cluster_routes.hpp.
#include "upstream/cluster/cluster_router.hpp"

#include <algorithm>
#include <string>

#include "resp/encoder.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/cluster_merge.hpp"
#include "upstream/cluster/cluster_replica_reads.hpp"
#include "upstream/cluster/cluster_scan.hpp"
#include "upstream/cluster/cluster_split.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/cluster/node_bound_link.hpp"

namespace corral::upstream {

namespace {
// A command held for the first slot map: its words, and what the shape said of them then (the
// caller's shape does not outlive its call).
class HeldCommand final : public CommandShape {
 public:
  HeldCommand(const Routed& command, std::vector<std::size_t> keys)
      : name_(command.shape.name()),
        read_only_(command.shape.read_only()),
        key_step_(command.shape.key_step()),
        keys_(std::move(keys)),
        words_(command.argv.begin(), command.argv.end()),
        bytes_(command.bytes),
        database_(command.database),
        affinity_(command.affinity),
        protocol_(command.protocol) {}

  std::string_view name() const override { return name_; }
  bool read_only() const override { return read_only_; }
  std::size_t key_step() const override { return key_step_; }
  void find_keys(std::span<const std::string_view>, std::vector<std::size_t>& out) const override {
    out = keys_;
  }

  // Valid while this object lives and `view` is not cleared.
  Routed routed(std::vector<std::string_view>& view) const {
    view.assign(words_.begin(), words_.end());
    return Routed{*this, view, bytes_, database_, affinity_, protocol_};
  }

 private:
  std::string name_;
  bool read_only_;
  std::size_t key_step_;
  std::vector<std::size_t> keys_;
  std::vector<std::string> words_;
  std::string bytes_;
  int database_;
  std::size_t affinity_;
  int protocol_;
};
}  // namespace

ClusterRouter::ClusterRouter(ClusterLinks& links, const config::UpstreamSettings& settings)
    : links_(links), settings_(settings), fast_path_(std::make_shared<ClusterFastPath>(links)) {}

int ClusterRouter::slot_of(const Routed& command) {
  command.shape.find_keys(command.argv, keys_);
  if (keys_.empty()) return kAnyPartition;
  const int slot = key_slot(command.argv[keys_.front()]);
  for (std::size_t i = 1; i < keys_.size(); ++i) {
    if (key_slot(command.argv[keys_[i]]) != slot) return kSpansPartitions;
  }
  return slot;
}

// Before the first slot map (start-up, or every node unreachable so far) a request waits for one,
// a little longer than one refresh attempt on a hanging seed takes, instead of failing at once.
void ClusterRouter::send_when_mapped(const Routed& command, std::uint64_t tag,
                                     const std::shared_ptr<ReplyTarget>& target, int waited) {
  constexpr std::chrono::milliseconds kPoll{50};
  const auto limit = settings_.connect_timeout + 2 * settings_.command_timeout;
  if (waited * kPoll >= limit) {
    links_.request_refresh(RefreshReason::clusterdown);
    const auto failure = links_.map_failure();
    if (failure.empty()) return target->on_failure(tag, kErrSlotUnserved);
    return target->on_failure(tag, slot_unserved_error(failure));
  }
  command.shape.find_keys(command.argv, keys_);
  auto held = std::make_shared<HeldCommand>(command, keys_);
  links_.run_after(kPoll, [this, held, tag, target, waited] {
    std::vector<std::string_view> view;
    const Routed again = held->routed(view);
    if (links_.routes().primaries.empty()) return send_when_mapped(again, tag, target, waited + 1);
    send(again, tag, target);
  });
}

void ClusterRouter::send(const Routed& command, std::uint64_t tag,
                         const std::shared_ptr<ReplyTarget>& target) {
  if (links_.routes().primaries.empty()) return send_when_mapped(command, tag, target, 0);
  const int slot = slot_of(command);
  if (auto* reads = links_.replica_reads();
      reads != nullptr && reads->tracks_writes() && !command.shape.read_only()) {
    // read_your_writes: the ledger sees the write from now until its answer.
    const auto tracked = reads->track_write(links_, command.affinity, std::max(slot, -1), target);
    return send_routed(command, slot, tag, tracked);
  }
  send_routed(command, slot, tag, target);
}

void ClusterRouter::send_routed(const Routed& command, int slot, std::uint64_t tag,
                                const std::shared_ptr<ReplyTarget>& target) {
  if (slot >= 0) return send_keyed(command, slot, tag, target);
  const ClusterRouteRow* route = find_cluster_route(command.shape.name());
  if (slot == kSpansPartitions) {
    if (route && route->route == ClusterRoute::split_by_slot)
      return split(command, *route, tag, target);
    links_.counters().crossslot_refused.fetch_add(1, std::memory_order_relaxed);
    std::string error;
    resp::append_error(error, kErrCrossSlot);
    return target->on_reply(tag, error);
  }
  const auto& primaries = links_.routes().primaries;
  const ClusterRoute kind = route ? route->route : ClusterRoute::any_primary;
  switch (kind) {
    case ClusterRoute::all_primaries:
      return fan_out(command, *route, tag, target);
    case ClusterRoute::scan:
      return scan(command, tag, target);
    case ClusterRoute::refused:
      return target->on_failure(tag, kErrRefusedOnCluster);
    case ClusterRoute::random_primary:
      random_ = random_ * 6364136223846793005ull + 1442695040888963407ull;
      return to_node(command, primaries[(random_ >> 33) % primaries.size()], command.bytes, tag,
                     target);
    default:
      return to_node(command, primaries[command.affinity % primaries.size()], command.bytes, tag,
                     target);
  }
}

// What every command routed by its keys' slot carries: redirects are followed, a failover is
// waited out (failover_hold, at least command_timeout, as CLUSTERDOWN always was), reads may go
// to replicas as read_from says.
ClusterCommandOptions ClusterRouter::keyed_options(const Routed& command) const {
  ClusterCommandOptions options;
  options.read_only = command.shape.read_only();
  options.affinity = command.affinity;
  options.protocol = command.protocol;
  options.max_redirects = settings_.max_redirects;
  options.hold = std::max(settings_.failover_hold, settings_.command_timeout);
  options.command_timeout = settings_.command_timeout;
  options.hold_limit = static_cast<std::int64_t>(settings_.failover_hold_max);
  options.read_from = settings_.read_from;
  return options;
}

void ClusterRouter::send_keyed(const Routed& command, int slot, std::uint64_t tag,
                               const std::shared_ptr<ReplyTarget>& target) {
  ClusterCommandOptions options = keyed_options(command);
  options.slot = slot;
  // The common case needs no redirect-following object: the slot's primary is known, healthy and
  // connected, and no request of the slot is held. Anything else (a replica read, a failing
  // primary, a connection backing off, a failover being waited out) takes the ClusterCommand, as
  // does a redirect reply to a command sent here.
  auto& routes = links_.routes();
  const int owner = routes.owner[slot];
  if (owner >= 0 && routes.nodes[owner].healthy && !links_.held().holding(slot) &&
      (!options.read_only || options.read_from == config::ReadFrom::primary)) {
    auto& link = links_.node_link(owner, options.affinity, options.protocol);
    if (link.state() == Link::State::ready &&
        fast_path_->send(link, command.bytes, options, target, tag)) {
      return;
    }
  }
  std::make_shared<ClusterCommand>(links_, std::string(command.bytes), options, target, tag)
      ->start();
}

void ClusterRouter::to_node(const Routed& command, int node, std::string_view bytes,
                            std::uint64_t tag, const std::shared_ptr<ReplyTarget>& target) {
  ClusterCommandOptions options;
  options.node = node;
  options.affinity = command.affinity;
  options.protocol = command.protocol;
  std::make_shared<ClusterCommand>(links_, std::string(bytes), options, target, tag)->start();
}

void ClusterRouter::split(const Routed& command, const ClusterRouteRow& route, std::uint64_t tag,
                          const std::shared_ptr<ReplyTarget>& target) {
  // The key step of a split command: 2 for MSET's key value pairs, else 1.
  const std::size_t group = std::max<std::size_t>(1, command.shape.key_step());
  send_split_by_slot(links_, command.argv, keys_, group, route.merge, keyed_options(command),
                     target, tag);
}

void ClusterRouter::fan_out(const Routed& command, const ClusterRouteRow& route, std::uint64_t tag,
                            const std::shared_ptr<ReplyTarget>& target) {
  // Each primary's part goes out as a command of the first slot it owns: a part whose primary is
  // failing then waits out the failover like a keyed command (failover_hold) and goes to the
  // promoted replica, which owns that slot by then.
  const auto& routes = links_.routes();
  std::vector<int> first_slots;
  first_slots.reserve(routes.primaries.size());
  std::vector<bool> seen(routes.nodes.size(), false);
  for (std::size_t slot = 0; slot < kSlotCount && first_slots.size() < routes.primaries.size();
       ++slot) {
    const int owner = routes.owner[slot];
    if (owner < 0 || seen[owner]) continue;
    seen[owner] = true;
    first_slots.push_back(static_cast<int>(slot));
  }
  auto merge = std::make_shared<ClusterMergeTarget>(
      route.merge, first_slots.size(), std::vector<std::vector<std::size_t>>{}, target, tag);
  ClusterCommandOptions options = keyed_options(command);
  options.read_from = config::ReadFrom::primary;  // one part per primary, as the merge expects
  for (std::size_t part = 0; part < first_slots.size(); ++part) {
    options.slot = first_slots[part];
    std::make_shared<ClusterCommand>(links_, std::string(command.bytes), options, merge, part)
        ->start();
  }
}

std::uint16_t ClusterRouter::fingerprint() {
  const auto& routes = links_.routes();
  std::vector<config::Endpoint> endpoints;
  for (int p : routes.primaries) endpoints.push_back(routes.nodes[p].endpoint);
  return primaries_fingerprint(endpoints);
}

void ClusterRouter::scan(const Routed& command, std::uint64_t tag,
                         const std::shared_ptr<ReplyTarget>& target) {
  const auto argv = command.argv;
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
  std::string rewritten;
  resp::append_command(rewritten, sub);
  auto rewrite = std::make_shared<ClusterScanTarget>(*cursor, primaries.size(), target);
  to_node(command, primaries[cursor->node], rewritten, tag, rewrite);
}

std::shared_ptr<Link> ClusterRouter::dedicated_for_slot(int slot, std::size_t affinity,
                                                        int protocol) {
  auto& routes = links_.routes();
  int node = -1;
  if (slot >= 0) {
    node = routes.owner[slot];
  } else if (!routes.primaries.empty()) {
    node = routes.primaries[affinity % routes.primaries.size()];
  }
  if (node < 0) {
    links_.request_refresh(RefreshReason::clusterdown);
    return nullptr;
  }
  auto connection = links_.dedicated_node_link(node, protocol);
  if (!connection) return nullptr;
  return std::make_shared<NodeBoundLink>(links_, settings_.max_redirects, std::move(connection),
                                         node, protocol);
}

}  // namespace corral::upstream
