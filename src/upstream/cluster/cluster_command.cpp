// Redirect handling of one cluster command. Redirect replies are recognised by their first word,
// as Redis Cluster clients do ("-MOVED 3999 127.0.0.1:6381").
#include "upstream/cluster/cluster_command.hpp"

#include <algorithm>

#include "resp/encoder.hpp"
#include "upstream/cluster/cluster_replica_reads.hpp"
#include "upstream/cluster/redirect.hpp"
#include "upstream/errors.hpp"

namespace corral::upstream {

namespace {

constexpr std::chrono::milliseconds kTryAgainBackoff{20};
constexpr std::chrono::milliseconds kClusterDownBackoff{100};
using Clock = std::chrono::steady_clock;

}  // namespace

std::string slot_unserved_error(std::string_view map_failure) {
  std::string error(kErrSlotUnserved.substr(0, kErrSlotUnserved.size() - 1));
  error += "; last attempt: ";
  for (char c : map_failure) error += (c == '\r' || c == '\n') ? ' ' : c;
  error += ')';
  return error;
}

ClusterCommand::ClusterCommand(ClusterLinks& links, std::string command,
                               ClusterCommandOptions options, std::shared_ptr<ReplyTarget> target,
                               std::uint64_t tag)
    : links_(links),
      command_(std::move(command)),
      options_(options),
      target_(std::move(target)),
      tag_(tag) {}

void ClusterCommand::start() {
  if (options_.hold.count() > 0 && arrived_ == Clock::time_point{}) arrived_ = links_.now();
  if (options_.hold.count() > 0 && options_.slot >= 0 && waits_behind()) {
    // Requests of a held slot queue behind it: they reach the promoted replica in order.
    if (!hold()) fail(ErrorKind::clusterdown, kErrPrimaryFailing);
    return;
  }
  const int node = pick_node();
  if (node == -1) {
    links_.request_refresh(RefreshReason::clusterdown);
    return fail_or_retry(ErrorKind::clusterdown, kErrSlotUnserved);
  }
  if (node == -3) return fail(ErrorKind::upstream_unavailable, kErrNoReplica);
  if (node == -2) {
    // The map says the primary failed: the promoted replica shows in a refresh soon.
    links_.request_refresh(RefreshReason::clusterdown);
    return wait_or_fail(ErrorKind::clusterdown, kErrPrimaryFailing);
  }
  send_to(node, false);
}

// A new request waits behind every held one of its slot; a held one being retried, behind those
// of its slot that went back to wait ahead of it.
bool ClusterCommand::waits_behind() const {
  const auto& held = links_.held();
  return held_ ? held.requeued(options_.slot) : held.holding(options_.slot);
}

// The node for this command: -1 none serves the slot, -2 its primary is marked failing, -3 a
// read for replicas only (read_from: replica) finds no healthy one.
int ClusterCommand::pick_node() {
  auto& routes = links_.routes();
  if (options_.slot < 0) {
    return options_.node >= 0 && options_.node < static_cast<int>(routes.nodes.size())
               ? options_.node
               : -1;
  }
  const int owner = routes.owner[options_.slot];
  if (owner < 0) return -1;
  if (options_.replica_fill.wanted && options_.replica_fill.seen) {
    if (auto* reads = links_.replica_reads()) {
      const int replica = reads->pick_fill(routes, owner, *options_.replica_fill.seen);
      if (replica >= 0) return replica;
    }
  }
  if (options_.read_only && options_.read_from != config::ReadFrom::primary) {
    if (auto* reads = links_.replica_reads()) return pick_by_offsets(*reads, owner);
    std::vector<int> replicas = routes.replicas_of(owner);
    std::erase_if(replicas, [&routes](int r) { return !routes.nodes[r].healthy; });
    if (!replicas.empty()) return replicas[options_.affinity % replicas.size()];
    if (options_.read_from == config::ReadFrom::replica) return -3;
  }
  return routes.nodes[owner].healthy ? owner : -2;
}

// A replica within max_replica_lag that has the client's writes; else the primary
// (prefer_replica, or the client's own writes), or -3 (replica: none usable).
int ClusterCommand::pick_by_offsets(ClusterReplicaReads& reads, int owner) {
  auto& routes = links_.routes();
  const auto pick = reads.pick(routes, owner, options_.affinity);
  if (pick.place == ClusterReplicaReads::Place::replica) return pick.node;
  if (pick.place == ClusterReplicaReads::Place::no_usable_replica &&
      options_.read_from == config::ReadFrom::replica) {
    return -3;
  }
  return routes.nodes[owner].healthy ? owner : -2;
}

void ClusterCommand::send_to(int node, bool asking) {
  auto& link = links_.node_link(node, options_.affinity, options_.protocol);
  if (asking && !link.send(kAskingCommand, std::make_shared<DiscardTarget>(), 0)) {
    links_.request_refresh(RefreshReason::connection);
    return wait_or_fail(ErrorKind::upstream_unavailable, kErrUnavailable);
  }
  if (!link.send(command_, shared_from_this(), tag_)) {
    // The node's connection is backing off (refused, dead): the map may be stale.
    links_.request_refresh(RefreshReason::connection);
    wait_or_fail(ErrorKind::upstream_unavailable, kErrUnavailable);
  }
}

void ClusterCommand::fail_or_retry(ErrorKind kind, std::string_view error) {
  if (unreachable_retries_ >= options_.unreachable_retries) return fail(kind, error);
  ++unreachable_retries_;
  links_.run_after(kClusterDownBackoff, [self = shared_from_this()] { self->start(); });
}

void ClusterCommand::wait_or_fail(ErrorKind kind, std::string_view error) {
  if (options_.hold.count() == 0) return fail_or_retry(kind, error);
  if (!hold()) fail(kind, error);
}

bool ClusterCommand::hold() {
  auto& counters = links_.counters();
  const auto now = links_.now();
  if (!held_) {
    // The hold counts from the request's arrival: a client waits at most `hold` in all.
    const auto until = (arrived_ == Clock::time_point{} ? now : arrived_) + options_.hold;
    if (now >= until) {
      counters.holds_expired.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (counters.requests_held.fetch_add(1, std::memory_order_relaxed) >= options_.hold_limit) {
      counters.requests_held.fetch_sub(1, std::memory_order_relaxed);
      counters.holds_refused.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    held_ = true;
    hold_until_ = until;
    counters.holds.fetch_add(1, std::memory_order_relaxed);
  } else if (now >= hold_until_) {
    counters.holds_expired.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  links_.held().add(options_.slot, shared_from_this());
  return true;
}

void ClusterCommand::release_hold() {
  if (!held_) return;
  held_ = false;
  links_.counters().requests_held.fetch_sub(1, std::memory_order_relaxed);
}

void ClusterCommand::fail(ErrorKind kind, std::string_view error) {
  release_hold();
  target_->on_error(tag_, kind, error);
}

bool ClusterCommand::follow_redirect(ErrorKind kind, std::string_view reply) {
  if (kind == ErrorKind::clusterdown) return false;
  if (options_.slot < 0 || hops_ >= options_.max_redirects) return false;
  ++hops_;
  if (kind == ErrorKind::tryagain) {
    // Keys of one multi-key command are mid-migration: wait a little, then ask the owner again.
    links_.counters().redirected(RedirectKind::tryagain);
    links_.run_after(kTryAgainBackoff * hops_, [self = shared_from_this()] { self->start(); });
    return true;
  }
  const auto redirect = read_redirect(reply);
  if (!redirect) return false;
  send_to(apply_redirect(links_, *redirect), kind == ErrorKind::ask);
  return true;
}

void ClusterCommand::on_reply(std::uint64_t, std::string_view reply) {
  if (const auto kind = cluster_handling(reply)) {
    if (follow_redirect(*kind, reply)) return;
    if (*kind == ErrorKind::clusterdown) {
      // Nothing ran: the cluster is between a primary's failure and its replica's promotion.
      links_.request_refresh(RefreshReason::clusterdown);
      if (options_.slot >= 0 && options_.hold.count() > 0 && hold()) return;
      if (options_.slot >= 0 && clusterdown_retries_ < options_.clusterdown_retries) {
        ++clusterdown_retries_;
        links_.run_after(kClusterDownBackoff, [self = shared_from_this()] { self->start(); });
        return;
      }
    } else {
      // Out of hops (or a fan-out part): say so instead of leaking a redirect to the client.
      std::string error = "ERR too many cluster redirects (max_redirects ";
      error += std::to_string(options_.max_redirects) + "), last: ";
      error += reply.substr(1, reply.size() - 3);
      return fail(*kind, error);
    }
  }
  release_hold();
  target_->on_reply(tag_, reply);
}

void ClusterCommand::on_error(std::uint64_t, ErrorKind kind, std::string_view error) {
  // A lost or timed-out connection: the node may have died; the map must say who took over.
  links_.request_refresh(RefreshReason::connection);
  if (options_.hold.count() == 0) return fail_or_retry(kind, error);
  if (kind == ErrorKind::timeout && arrived_ == Clock::time_point{}) {
    arrived_ = links_.now() - options_.command_timeout;  // sent on the fast path, then waited
  }
  const bool may_have_run = kind == ErrorKind::connection_lost || kind == ErrorKind::timeout;
  if (kind == ErrorKind::upstream_unavailable || (may_have_run && options_.read_only)) {
    return wait_or_fail(kind, error);  // nothing ran, or a read that may run again
  }
  // A write the dead node may have run: sent again, it could run twice.
  if (may_have_run) links_.counters().unknown_fate_writes.fetch_add(1, std::memory_order_relaxed);
  fail(kind, error);
}

// A failure without a kind: its fate is unknown, as after a lost connection.
void ClusterCommand::on_failure(std::uint64_t tag, std::string_view error) {
  on_error(tag, ErrorKind::connection_lost, error);
}

}  // namespace corral::upstream
