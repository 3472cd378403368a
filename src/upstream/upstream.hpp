// The upstream as everything above it sees it: one interface, whether it is one Redis
// (single/), a Redis Cluster (cluster/) or the primary Sentinel names (sentinel/: one Redis at a
// time, through single/'s upstream). Only this folder and the wiring know which.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <utility>

#include <boost/asio/awaitable.hpp>

#include "upstream/call.hpp"
#include "upstream/errors.hpp"
#include "upstream/keyed_caller.hpp"
#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

// What the upstream must know of a client command to place it. The proxy's command table
// implements it, so the upstream knows no table row.
class CommandShape {
 public:
  // The table's row name, lower case ("get", "script|kill"): how a partitioned upstream finds
  // the command's fan-out and merge rule.
  virtual std::string_view name() const = 0;
  virtual bool read_only() const = 0;
  // 2 for MSET's key value pairs: what a split keeps together with each key.
  virtual std::size_t key_step() const = 0;
  // Indices into argv of every key, in argument order; `out` is cleared first.
  virtual void find_keys(std::span<const std::string_view> argv,
                         std::vector<std::size_t>& out) const = 0;

 protected:
  ~CommandShape() = default;
};

// One client command, ready to leave: its wire bytes and what places it.
struct Routed {
  const CommandShape& shape;
  std::span<const std::string_view> argv;
  std::string_view bytes;
  int database = 0;
  std::size_t affinity = 0;  // the client's id: its commands keep their order on one connection
  int protocol = 2;          // the client's: a RESP3 client's replies come from a RESP3 connection
};

// Where a command's keys live on a partitioned upstream (a slot of a cluster).
inline constexpr int kAnyPartition = -1;     // keyless: any server will do
inline constexpr int kSpansPartitions = -2;  // keys on several servers: no single one can run it

// A link of the client's own, or why there is none.
struct SessionLinkResult {
  std::shared_ptr<Link> link;
  ErrorKind refusal = ErrorKind::upstream_unavailable;  // when link is null
};

// Where a command for a named server went (CLIENT UNBLOCK).
enum class ServerSend : std::uint8_t { sent, no_such_server, unavailable };

class Upstream;

// Why there is no upstream for an ACL user (see Upstream::as_user).
enum class UserUpstreamRefusal : std::uint8_t { none, unsupported, too_many_users };

struct UserUpstreamResult {
  std::shared_ptr<Upstream> upstream;  // null when refused
  UserUpstreamRefusal refusal = UserUpstreamRefusal::unsupported;
};

// Contract: one per io thread, used on that thread only. Every send either queues the command,
// whose outcome then reaches target->on_*(tag) exactly once, or returns false having told nobody.
class Upstream {
 public:
  virtual ~Upstream() = default;

  // A client's command on the shared connections.
  virtual bool send(const Routed& command, std::uint64_t tag,
                    const std::shared_ptr<ReplyTarget>& target) = 0;

  // True when keys live on several servers (a cluster's slots): then a session link serves the
  // one server of the keys it was opened for, and a transaction must keep to one partition.
  virtual bool partitioned() const = 0;
  // Whether a client's SELECT may choose a database other than 0 (a cluster refuses it; with
  // routes, the default upstream decides: SELECT changes the default upstream's database only).
  virtual bool selects_databases() const { return !partitioned(); }
  // Whether a client's own link, opened for `link_partition`, can run a command of `partition`
  // (partition_of() numbers). A cluster's links follow their keys' node; with routes, a link is
  // one upstream's, and another upstream's keys would run on the wrong server. `subscribes`: a
  // keyless SUBSCRIBE or PSUBSCRIBE, whose messages come from where PUBLISH goes.
  virtual bool link_serves(int /*link_partition*/, int /*partition*/, bool /*subscribes*/) {
    return true;
  }
  // The partition every key of the command is in: kAnyPartition or kSpansPartitions; always
  // kAnyPartition when not partitioned.
  virtual int partition_of(const Routed& command) = 0;
  // A new link owned by one client (MULTI/WATCH, blocking commands, pub/sub, tracking), to the
  // server of `partition` (kAnyPartition: any). It does not reconnect.
  virtual SessionLinkResult open_session_link(int partition, const Routed& command) = 0;
  // A session link its client left idle and clean (see Links::recycle_dedicated), in `database`
  // and `protocol`: the next session may take it rather than wait for a new connection.
  virtual void recycle_session_link(std::shared_ptr<Link> link, int /*database*/,
                                    int /*protocol*/) {
    link->close();
  }
  // A command refused because its keys span partitions, counted by the upstream.
  virtual void note_cross_partition_refusal() = 0;
  // The error such a command gets (without the leading '-').
  virtual std::string_view cross_partition_error() const { return kErrCrossSlot; }

  // Commands that must reach a busy server at once (SCRIPT KILL, FUNCTION KILL, SHUTDOWN): a
  // connection of their own to every server they concern, the replies merged into one.
  virtual bool send_out_of_band(const Routed& command, std::uint64_t tag,
                                const std::shared_ptr<ReplyTarget>& target) = 0;

  // A question about the server itself (COMMAND INFO, INFO): any server that answers, the next
  // one when a server fails. `command` is RESP2.
  virtual bool ask_server(std::string_view command, std::uint64_t tag,
                          const std::shared_ptr<ReplyTarget>& target) = 0;
  // The same as an awaitable call (COMMAND, for the learned command table).
  virtual boost::asio::awaitable<CallResult> call_server(std::string command) = 0;
  // Changes whenever the server behind the upstream may have changed (a reconnect, a new slot
  // map): what was learned from it is learned again.
  virtual std::uint64_t server_epoch() const = 0;
  // Changes when the upstream is replaced by another (a reload, see upstream_switch.hpp): a
  // session link opened before then belongs to the previous one.
  virtual std::uint64_t generation() const { return 0; }

  // A command for the server a session link named (see Link::follow_connections): "" for the one
  // server of an unpartitioned upstream. On the shared connection of `affinity`.
  virtual ServerSend send_to_server(std::string_view server, std::string_view command, int database,
                                    std::size_t affinity, int protocol, std::uint64_t tag,
                                    const std::shared_ptr<ReplyTarget>& target) = 0;

  // INFO through Corral. An upstream with one server asks it `info_command` and hands the reply
  // to `merge` (which joins Corral's sections to it). One with several servers merges no server's
  // INFO (one node's memory or keyspace would pass for the whole): `client` gets `corral_only`
  // plus, when `servers_wanted`, a section on the servers.
  virtual void answer_info(std::string_view info_command, std::string corral_only,
                           bool servers_wanted, std::size_t affinity, std::uint64_t tag,
                           const std::shared_ptr<ReplyTarget>& merge,
                           const std::shared_ptr<ReplyTarget>& client) = 0;
  // CORRAL.CLUSTER's report of the servers and the slots they serve; false (nothing appended)
  // when the upstream is not partitioned.
  virtual bool report_topology(std::string& reply) = 0;

  // A connection of Corral's own to the one server of an unpartitioned upstream, speaking
  // `protocol`, for state Redis keeps per connection that no client's commands may share: the
  // CLIENT TRACKING of hot-key fills, a CLIENT TRACKING REDIRECT's sink. Null when the upstream is
  // partitioned (its keys live on several servers) or none can be opened. It does not reconnect.
  virtual std::shared_ptr<Link> open_own_link(int database, int protocol) = 0;
  // The server that holds `key` now, named as open_own_link_to() and the tracking links name it
  // ("host:port" of a cluster node, "" for the one server of an unpartitioned upstream); nullopt
  // when no server serves it yet.
  virtual std::optional<std::string> server_of_key(std::string_view key) = 0;
  // open_own_link() to one server as server_of_key() named it, for state kept per connection on
  // a partitioned upstream too (each cluster node tracks the keys read on it). Null when the
  // server is unknown here or no connection can be opened. It does not reconnect.
  virtual std::shared_ptr<Link> open_own_link_to(std::string_view server, int database,
                                                 int protocol) = 0;
  // The database of the configured address: where cache fills read and Corral's own keys live
  // (a cluster has only 0). A reload may replace the upstream by one with another.
  virtual int database() const { return 0; }
  // Corral's own keyed conversations (fleet lock, versioned pointer, purge), in database().
  virtual std::shared_ptr<KeyedCaller> keyed_caller(const KeyedCallerOptions& options) = 0;
  // A cache fill: an idempotent read (GET-like, or MGET) of the configured database that waits
  // out a failover. The outcome never arrives from within the call.
  virtual void fetch(std::span<const std::string_view> argv, std::string_view bytes, int database,
                     const std::shared_ptr<ReplyTarget>& target) = 0;
  // A cache fill as fetch() that may read a replica the upstream follows (a policy's
  // `read_from: prefer_replica`), but only one whose replication offset shows it holds what the
  // primary held after `seen` (the last tracking message Corral received; nullopt: none yet,
  // so the primary); else, and on an upstream without such replicas, exactly fetch().
  virtual void fetch_from_replica(std::span<const std::string_view> argv, std::string_view bytes,
                                  int database,
                                  std::optional<std::chrono::steady_clock::time_point> seen,
                                  const std::shared_ptr<ReplyTarget>& target) {
    (void)seen;
    fetch(argv, bytes, database, target);
  }

  // The same upstream with every connection logged in as the ACL user `user` (whose password
  // the caller has had the server verify): the commands of a client that authenticated as that
  // user. Kept open while held. Unsupported unless the upstream kind implements it. The client
  // keeps `entered_database`, the one it was in, as Redis keeps it across AUTH.
  virtual UserUpstreamResult as_user(std::string_view /*user*/, std::string_view /*password*/,
                                     int /*entered_database*/) {
    return {};
  }
};

}  // namespace corral::upstream
