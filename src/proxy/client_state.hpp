// Per-client connection state that Corral keeps on the client's behalf: who it is, its database,
// and the mode of its dedicated upstream connection as one small state machine.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/commands/command_table.hpp"
#include "proxy/links/subscriptions.hpp"
#include "proxy/reply_mode.hpp"

namespace corral::upstream {
class Link;
class ReplyTarget;
class Upstream;
}  // namespace corral::upstream

namespace corral::proxy {

class TrackingRedirect;
struct UserCheck;

// The state Redis keeps for the client's dedicated connection, driven by the table's StateChange
// column. `state` is the transaction/tunnel axis; pins are what holds the connection besides it
// (they outlive transactions and subscriptions).
class ConnectionMode {
 public:
  enum class State : std::uint8_t {
    plain,
    watching,
    multi,
    multi_aborted,  // Corral refused a command queued in MULTI: EXEC must abort
    multi_lost,     // Redis forgot the transaction with its connection: EXEC must abort
    subscribed,     // tunnel until the last subscription ends
    tunnel,         // MONITOR: tunnel until the client leaves
    replica,        // SYNC/PSYNC: a raw byte relay until either side closes (or Redis refuses)
  };

  State state() const { return state_; }
  bool in_multi() const {
    return state_ == State::multi || state_ == State::multi_aborted || state_ == State::multi_lost;
  }
  // CLIENT LIST's multi=: the commands queued in the open transaction, -1 outside one. Like
  // Redis, a doomed transaction queues nothing more.
  int queued() const { return in_multi() ? queued_ : -1; }
  // Every reply from the dedicated connection goes straight to the client, unmatched to requests.
  bool tunneling() const { return state_ == State::subscribed || state_ == State::tunnel; }
  // The connection relays a replication stream: no request is framed any more.
  bool relaying() const { return state_ == State::replica; }
  // A replica's REPLCONF ran on the connection: its SYNC/PSYNC must follow there.
  bool replica_handshake() const { return (pins_ & kReplica) != 0; }
  // Losing the dedicated connection now would silently lose state the client relies on.
  bool holds_redis_state() const {
    return state_ == State::watching || in_multi() || (pins_ & (kTracking | kWatching)) != 0;
  }
  // CLIENT TRACKING on (CLIENT LIST's flags=t).
  bool tracking() const { return (pins_ & kTracking) != 0; }
  // CLIENT NO-EVICT on (flags=e); RESET keeps it, as in Redis 7.0.
  bool no_evict() const { return no_evict_; }
  // The dedicated connection may be released (once idle) only when this is false.
  bool holds_connection() const { return state_ != State::plain || pins_ != 0; }

  // `argv` is the request that Redis accepted for the client's dedicated connection.
  void apply(StateChange change, std::span<const std::string_view> argv);
  // Redis aborts a transaction whose queued command it rejected; Corral rejected one for it.
  void refused_in_multi();
  void ended_subscriptions();
  // A SUBSCRIBE queued in MULTI subscribes when EXEC runs it: true once, at that EXEC.
  bool take_queued_subscribe() { return std::exchange(subscribe_queued_, false); }
  void entered_subscriptions() { state_ = State::subscribed; }
  // Redis refused the SYNC/PSYNC: the client is back where it was before it (a REPLCONF's pin
  // stays, as Redis keeps what REPLCONF told it).
  void refused_replica_stream() {
    if (state_ == State::replica) state_ = State::plain;
  }
  // REPLCONF: Redis now takes the connection for a replica's, and the SYNC/PSYNC that follows
  // must run on it, so it stays the client's.
  void began_replica_handshake() { pins_ |= kReplica; }
  // The client still queues (it sent no EXEC or DISCARD) but Redis has no transaction any more:
  // nothing it queues may run, and EXEC aborts, as after a queued command Redis rejected.
  void lost_transaction() {
    state_ = State::multi_lost;
    pins_ = 0;
  }
  // A RESP3 client subscribed: the connection stays (its pushes arrive there) until the client
  // leaves, but requests keep their reply slots, since pushes cannot be mistaken for replies.
  void keep_for_pushes() { pins_ |= kPushes; }
  void ended_pushes() { pins_ &= ~kPushes; }
  // Subscribed in RESP3 (pushes) or in RESP2's tunnel: CLIENT LIST's pub/sub clients.
  bool in_pubsub() const { return state_ == State::subscribed || (pins_ & kPushes) != 0; }
  void reset();

 private:
  // kWatching: keys are watched, whatever the state says (a subscription ends into `watching`).
  enum Pin : std::uint8_t { kTracking = 1, kSticky = 2, kPushes = 4, kReplica = 8, kWatching = 16 };

  State state_ = State::plain;
  std::uint8_t pins_ = 0;
  bool no_evict_ = false;
  bool subscribe_queued_ = false;
  int queued_ = 0;
};

// A session link kept open, idle and clean, after the client's blocking command ended: the next
// blocking command leaves on it at once (see proxy/links/blocking_session.hpp). It serves only the
// database, protocol and partition it was opened for.
struct KeptLink {
  std::shared_ptr<upstream::Link> link;
  int database = 0;
  int protocol = 2;
  int partition = -1;
  std::string upstream_user;  // the upstream ACL user it is authenticated as ("" for Corral's)
};

struct ClientState {
  std::uint64_t id = 0;
  bool authenticated = false;
  bool admin = false;
  int database = 0;
  int protocol = 2;  // RESP version, switched by HELLO
  // The shared connection (database, protocol) of the client's last forwarded command.
  int shared_database = 0;
  int shared_protocol = 2;
  ReplyMode reply_mode = ReplyMode::on;
  // The last SYNC/PSYNC was sent under CLIENT REPLY OFF/SKIP: Redis's refusal is not shown.
  bool replica_refusal_withheld = false;
  // The open transaction queued an ACL command that may change users: its EXEC forgets what was
  // learned of the rules once it has run (local/acl_verdicts.hpp).
  bool acl_change_queued = false;
  // A valid SELECT queued in the open transaction (-1: none), and the database an EXEC that ran
  // it chose, set when EXEC's reply comes (proxy/links/queued_select.hpp).
  int queued_database = -1;
  std::shared_ptr<int> database_after_exec;
  std::string name;

  // A connection of the client's own, while `mode` needs one; released once it does not and no
  // command is in flight.
  std::shared_ptr<upstream::Link> dedicated;
  // The upstream's generation() when `dedicated` (or the kept link) was opened.
  std::uint64_t dedicated_generation = 0;
  ConnectionMode mode;
  // Blocking commands sent on `dedicated` that Redis has not answered: while this is not zero the
  // client is blocked in Redis. Shared with those commands' reply targets.
  std::shared_ptr<std::size_t> blocking_replies_due;
  // The same count as CLIENT LIST reads it from any thread (flags=b); null without a registry
  // record. Never reset: a command of a released link still counts until its outcome.
  std::shared_ptr<std::atomic<int>> shown_blocked;
  bool dedicated_blocked = false;  // `dedicated` carried a blocking command: worth keeping
  KeptLink kept;
  std::vector<std::string> queued_write_keys;  // keys of writes queued in MULTI, dropped at EXEC
  bool queued_flush_all = false;  // FLUSHDB/FLUSHALL/SWAPDB queued in MULTI: EXEC flushes the cache
  // RESP2 subscribed mode: tunnel barriers sent and not answered yet
  // (proxy/links/tunnel_barrier.hpp), while which the client's next requests wait; whether one came
  // back since the last request forwarded in the tunnel (Redis's replies to everything sent before
  // it are then in); and whether the last (un)subscribe confirmation left no subscription (for an
  // ACL user that may not PING, whose barrier tells nothing).
  std::size_t tunnel_barriers_due = 0;
  bool tunnel_checked = false;
  bool last_confirmation_ended = false;
  SubscriptionCounts subscriptions;  // what the dedicated connection's confirmations said
  // RESP3 (un)subscribe requests whose reply slot waits for their first confirmation push, so the
  // client's later replies cannot overtake it (Redis sends the confirmation first).
  std::deque<std::pair<std::uint64_t, std::shared_ptr<upstream::ReplyTarget>>> pushed_requests;
  // Redis Cluster: the slot the dedicated connection was opened for (-1: none or any primary),
  // and a transaction's MULTI and keyless commands held until its first key picks the node.
  int cluster_slot = -1;
  std::vector<std::string> held_commands;
  // Since when the command needing a session link has waited for its slot's promoted replica
  // (unset: not waiting).
  std::chrono::steady_clock::time_point link_wait_since{};
  // MONITOR: how lines reach this client from any thread (empty without a session), and whether
  // it is in the feed (proxy/local/monitor_feed.hpp).
  std::function<void(std::string)> push;
  std::string addr;
  bool monitoring = false;
  // CLIENT TRACKING ... REDIRECT: the connection Redis redirects to and the client it stands for.
  std::shared_ptr<TrackingRedirect> tracking_redirect;
  // AUTH user pass with an upstream ACL user: the upstream that runs this client's commands as
  // that user (null: Corral's own upstream user), the user's name, and a check still due.
  std::shared_ptr<upstream::Upstream> user_upstream;
  std::string upstream_user;
  std::shared_ptr<UserCheck> user_check;
};

// Closes the client's dedicated connection and its kept link (if any) and leaves every mode that
// held it.
void release_dedicated(ClientState& client);

}  // namespace corral::proxy
