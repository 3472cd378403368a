// A replica through Corral (Route::replication): REPLCONF runs on a connection of the client's
// own, and SYNC/PSYNC make that connection a raw byte relay once Redis accepts them, so that the
// RDB payload (no reply framing) and the stream after it never reach a connection other clients
// share; refused, the client is an ordinary one again.
#include "proxy/commands/command_shape.hpp"
#include "proxy/dispatcher.hpp"
#include "proxy/errors.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"
#include "upstream/link.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {
// Redis's own answer: the replication commands are flagged no-multi.
constexpr std::string_view kErrInMulti = "ERR Command not allowed inside a transaction";
constexpr std::string_view kErrConnectionHeld =
    "ERR a replica needs a connection of its own: this one holds a transaction, subscription or "
    "tracking state; send the replication commands on a new connection";
constexpr std::string_view kErrNoSingleServer =
    "ERR this proxy relays a replication stream from one server only, and its upstream spreads "
    "keys over several (a Redis Cluster): connect the replica to a node";
}  // namespace

Action Dispatcher::forward_replication(ClientState& client, const Request& request,
                                       const CommandSpec& row, std::uint64_t tag,
                                       const std::shared_ptr<upstream::ReplyTarget>& target,
                                       std::size_t awaiting) {
  scratch_.clear();
  if (client.mode.in_multi()) {
    client.mode.refused_in_multi();
    resp::append_error(scratch_, kErrInMulti);
    target->on_reply(tag, scratch_);
    return Action::done;
  }
  // The stream must follow the client's earlier replies, and a link is switched only when idle.
  if (awaiting > 0) return Action::drain_then_retry;
  if (client.dedicated && !client.mode.replica_handshake()) {
    if (client.mode.holds_connection()) {
      resp::append_error(scratch_, kErrConnectionHeld);
      target->on_reply(tag, scratch_);
      return Action::done;
    }
    release_dedicated(client);  // a blocking command's, idle: the replica's starts clean
  }
  if (!client.dedicated) {
    const TableShape shape(row);
    // The client's protocol: after a REPLCONF its ordinary commands run on this link too.
    const upstream::Routed command{shape,           request.argv, {},
                                   client.database, client.id,    client.protocol};
    // A cluster upstream without its first slot map yet: the SYNC waits for it, as a keyed
    // command does, and then learns that a cluster cannot stream.
    if (!open_dedicated(client, upstream::kAnyPartition, command)) return Action::wait_then_retry;
    if (!client.dedicated) {
      target->on_failure(tag, upstream::kErrUnavailable);
      return Action::done;
    }
  }
  if (client.dedicated->state() == upstream::Link::State::closed) {
    // The link REPLCONF opened is gone: so is what it told Redis; the replica starts again.
    release_dedicated(client);
    target->on_failure(tag, upstream::kErrConnectionLost);
    return Action::done;
  }
  const std::string_view bytes = wire_bytes(request);
  if (row.change != StateChange::replica_stream) {
    client.mode.began_replica_handshake();
    if (!client.dedicated->send_in_session(upstream::SessionCommand::other, bytes, target, tag,
                                           false)) {
      release_dedicated(client);
      target->on_failure(tag, upstream::kErrUnavailable);
    }
    return Action::done;
  }
  if (!client.dedicated->start_raw_relay()) {
    release_dedicated(client);
    scratch_.clear();
    resp::append_error(scratch_, kErrNoSingleServer);
    target->on_reply(tag, scratch_);
    return Action::done;
  }
  client.mode.apply(row.change, request.argv);
  // Under CLIENT REPLY OFF/SKIP (pushes_to_ set) the stream still reaches the client, as Redis
  // writes it past the reply mode, but a refusal is an ordinary error reply, withheld.
  client.replica_refusal_withheld = pushes_to_ != nullptr;
  client.dedicated->set_unsolicited_target(pushes_to_ != nullptr ? *pushes_to_ : target);
  if (!client.dedicated->send_untracked(bytes)) {
    release_dedicated(client);
    target->on_failure(tag, upstream::kErrUnavailable);
    return Action::done;
  }
  return Action::relay;
}

session::RelayVerdict Dispatcher::relay_verdict(ClientState& client) {
  using upstream::Link;
  const auto state = client.dedicated ? client.dedicated->relay_state() : Link::RelayState::off;
  if (state == Link::RelayState::awaiting_verdict) return session::RelayVerdict::due;
  if (state == Link::RelayState::relaying) return session::RelayVerdict::accepted;
  // The link stays the client's only if a REPLCONF pinned it, as Redis keeps what that told it;
  // otherwise the next command sets it aside (forward()), since it holds nothing.
  client.mode.refused_replica_stream();
  return client.replica_refusal_withheld ? session::RelayVerdict::refused_unanswered
                                         : session::RelayVerdict::refused;
}

bool Dispatcher::relay_input(ClientState& client, std::string_view bytes) {
  return client.mode.relaying() && client.dedicated && client.dedicated->send_untracked(bytes);
}

void Dispatcher::hold_relay(ClientState& client, bool held) {
  if (client.mode.relaying() && client.dedicated) client.dedicated->hold_raw_relay(held);
}

bool Dispatcher::hold_relay_input(ClientState& client, std::size_t limit,
                                  std::function<void()> resume) {
  return client.mode.relaying() && client.dedicated &&
         client.dedicated->hold_relay_input(limit, std::move(resume));
}

}  // namespace corral::proxy
