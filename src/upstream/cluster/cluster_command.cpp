// Redirect handling of one cluster command. Redirect replies are recognised by their first word,
// as Redis Cluster clients do ("-MOVED 3999 127.0.0.1:6381").
#include "upstream/cluster/cluster_command.hpp"

#include <algorithm>

#include "resp/encoder.hpp"
#include "upstream/cluster/redirect.hpp"
#include "upstream/errors.hpp"

namespace corral::upstream {

namespace {

constexpr std::chrono::milliseconds kTryAgainBackoff{20};
constexpr std::chrono::milliseconds kClusterDownBackoff{100};

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
  const int node = pick_node();
  if (node == -1) {
    links_.request_refresh(RefreshReason::clusterdown);
    return fail_or_retry(ErrorKind::clusterdown, kErrSlotUnserved);
  }
  if (node == -2) {
    // The map says the primary failed: the promoted replica shows in a refresh soon.
    links_.request_refresh(RefreshReason::clusterdown);
    return fail_or_retry(ErrorKind::clusterdown, kErrPrimaryFailing);
  }
  send_to(node, false);
}

// The node for this command: -1 none serves the slot, -2 its primary is marked failing.
int ClusterCommand::pick_node() {
  auto& routes = links_.routes();
  if (options_.slot < 0) {
    return options_.node >= 0 && options_.node < static_cast<int>(routes.nodes.size())
               ? options_.node
               : -1;
  }
  const int owner = routes.owner[options_.slot];
  if (owner < 0) return -1;
  if (options_.read_only && options_.read_from != config::ReadFrom::primary) {
    std::vector<int> replicas = routes.replicas_of(owner);
    std::erase_if(replicas, [&routes](int r) { return !routes.nodes[r].healthy; });
    if (!replicas.empty()) return replicas[options_.affinity % replicas.size()];
  }
  return routes.nodes[owner].healthy ? owner : -2;
}

void ClusterCommand::send_to(int node, bool asking) {
  auto& link = links_.node_link(node, options_.affinity, options_.protocol);
  if (asking && !link.send(kAskingCommand, std::make_shared<DiscardTarget>(), 0)) {
    links_.request_refresh(RefreshReason::connection);
    return fail_or_retry(ErrorKind::upstream_unavailable, kErrUnavailable);
  }
  if (!link.send(command_, shared_from_this(), tag_)) {
    // The node's connection is backing off (refused, dead): the map may be stale.
    links_.request_refresh(RefreshReason::connection);
    fail_or_retry(ErrorKind::upstream_unavailable, kErrUnavailable);
  }
}

void ClusterCommand::fail_or_retry(ErrorKind kind, std::string_view error) {
  if (unreachable_retries_ >= options_.unreachable_retries) {
    target_->on_error(tag_, kind, error);
    return;
  }
  ++unreachable_retries_;
  links_.run_after(kClusterDownBackoff, [self = shared_from_this()] { self->start(); });
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
      links_.request_refresh(RefreshReason::clusterdown);
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
      target_->on_error(tag_, *kind, error);
      return;
    }
  }
  target_->on_reply(tag_, reply);
}

void ClusterCommand::on_error(std::uint64_t, ErrorKind kind, std::string_view error) {
  // A lost or timed-out connection: the node may have died; the map must say who took over.
  links_.request_refresh(RefreshReason::connection);
  fail_or_retry(kind, error);
}

// A failure without a kind: its fate is unknown, as after a lost connection.
void ClusterCommand::on_failure(std::uint64_t tag, std::string_view error) {
  on_error(tag, ErrorKind::connection_lost, error);
}

}  // namespace corral::upstream
