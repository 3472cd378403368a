// One command on a Redis Cluster, sent to the node that serves its slot and followed through
// MOVED (the slot moved: route it there from now on), ASK (this once, after ASKING) and TRYAGAIN
// (a short backoff), at most max_redirects hops: the client never sees a redirect.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/settings.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/errors.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

struct ClusterCommandOptions {
  int slot = -1;           // the slot whose owner answers; -1 with `node` set: a fixed node
  int node = -1;           // fan-out: this node of routes(), redirects are not followed
  bool read_only = false;  // may go to a replica when read_from says so
  std::size_t affinity = 0;
  int protocol = 2;
  int max_redirects = 5;
  // Client requests: how long after its arrival one may still wait for its slot's primary
  // (failing, unreachable, the cluster down) in the thread's ClusterHold, and how many may wait
  // at once process-wide. Reads lost with a connection wait too (a timed-out one arrived
  // command_timeout ago); writes that may have run are answered with the error. 0: Corral's own
  // calls, which count their retries below instead.
  std::chrono::milliseconds hold{0};
  std::chrono::milliseconds command_timeout{0};
  std::int64_t hold_limit = 0;
  // CLUSTERDOWN (no command ran) is retried this many times, 100 ms apart: a failover's window
  // where the cluster reports itself down passes without client errors when it is short.
  int clusterdown_retries = 0;
  // Idempotent reads of Corral's own (cache fetches): an unreachable node, a lost connection or a
  // slot without a primary is retried this many times, 100 ms apart, with a refresh each time,
  // so a failover delays a fetch instead of failing it (and tripping the policy's breaker).
  int unreachable_retries = 0;
  config::ReadFrom read_from = config::ReadFrom::primary;
  // A cache fill that may read a replica of the slot's primary holding what the primary held
  // after `seen` (Upstream::fetch_from_replica); the primary otherwise.
  struct ReplicaFill {
    bool wanted = false;
    std::optional<std::chrono::steady_clock::time_point> seen;
  };
  ReplicaFill replica_fill;
};

// The error a command gets when its slot has no reachable primary in the map (fail fast).
inline constexpr std::string_view kErrSlotUnserved =
    "CLUSTERDOWN Hash slot not served (Corral is waiting for the cluster's slot map)";
// kErrSlotUnserved naming why no map came (Topology::last_failure(), e.g. a node refusing AUTH),
// on one line: a wrong password reads as such instead of as an endless wait.
std::string slot_unserved_error(std::string_view map_failure);
// `read_from: replica` and no replica of the slot's primary is usable: healthy in the map and
// within max_replica_lag.
inline constexpr std::string_view kErrNoReplica =
    "ERR no usable replica serves this slot (upstream.read_from: replica reads only from "
    "replicas that are healthy and within max_replica_lag; prefer_replica falls back to the "
    "primary)";

// The kinds of error reply a ClusterCommand acts on (MOVED, ASK, TRYAGAIN, CLUSTERDOWN); any
// other reply is the client's answer as it stands.
inline bool is_cluster_redirect(ErrorKind kind) {
  return kind == ErrorKind::moved || kind == ErrorKind::ask || kind == ErrorKind::tryagain ||
         kind == ErrorKind::clusterdown;
}
// The kind of `reply` when it is one of those; nullopt for any other reply (checked by its first
// byte before anything is read).
inline std::optional<ErrorKind> cluster_handling(std::string_view reply) {
  if (reply.empty() || reply.front() != '-') return std::nullopt;
  const ErrorKind kind = classify_error_reply(reply);
  return is_cluster_redirect(kind) ? std::optional(kind) : std::nullopt;
}

class ClusterCommand final : public ReplyTarget,
                             public std::enable_shared_from_this<ClusterCommand> {
 public:
  ClusterCommand(ClusterLinks& links, std::string command, ClusterCommandOptions options,
                 std::shared_ptr<ReplyTarget> target, std::uint64_t tag);

  // Sends the command; its outcome reaches target->on_*(tag) exactly once, later or at once.
  void start();

  // Ends a held command with `error` (its thread's connections are closing).
  void abandon(ErrorKind kind, std::string_view error) { fail(kind, error); }

  void on_reply(std::uint64_t, std::string_view reply) override;
  void on_failure(std::uint64_t, std::string_view error) override;
  void on_error(std::uint64_t, ErrorKind kind, std::string_view error) override;

 private:
  bool waits_behind() const;
  int pick_node();
  int pick_by_offsets(ClusterReplicaReads& reads, int owner);
  void send_to(int node, bool asking);
  // True when `reply`, of `kind`, was a redirect this command follows (it has been re-sent).
  bool follow_redirect(ErrorKind kind, std::string_view reply);
  // Fails the command with `error`, unless unreachable_retries allow another try later.
  void fail_or_retry(ErrorKind kind, std::string_view error);
  // Nothing ran: a client request waits in its hold, Corral's own call retries as it may.
  void wait_or_fail(ErrorKind kind, std::string_view error);
  // Queues the command in the thread's hold; false when it must be answered now instead (its
  // hold ran out, or hold_limit requests wait already).
  bool hold();
  void release_hold();
  void fail(ErrorKind kind, std::string_view error);

  ClusterLinks& links_;
  std::string command_;
  ClusterCommandOptions options_;
  std::shared_ptr<ReplyTarget> target_;
  std::uint64_t tag_;
  int hops_ = 0;
  int clusterdown_retries_ = 0;
  int unreachable_retries_ = 0;
  bool held_ = false;  // counted in ClusterCounters::requests_held
  // When the client's request arrived, as far as known (a fast-path command's is not: epoch).
  std::chrono::steady_clock::time_point arrived_{};
  std::chrono::steady_clock::time_point hold_until_{};
};

}  // namespace corral::upstream
