// The connection-mode state machine, and leaving the modes that hold a dedicated connection.
#include "proxy/client_state.hpp"

#include <utility>

#include "proxy/ascii.hpp"
#include "proxy/links/tracking_redirect.hpp"
#include "proxy/local/client_registry.hpp"
#include "upstream/errors.hpp"
#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {
void ConnectionMode::apply(StateChange change, std::span<const std::string_view> argv) {
  // What Redis queues: all but the commands that run at once inside MULTI.
  if (state_ == State::multi && change != StateChange::multi && change != StateChange::exec &&
      change != StateChange::discard && change != StateChange::watch &&
      change != StateChange::quit && change != StateChange::reset) {
    ++queued_;
  }
  switch (change) {
    case StateChange::multi:
      // A nested MULTI is Redis's error and changes nothing: a transaction already doomed (a
      // queued command was refused) must still abort at EXEC.
      if (!in_multi()) {
        state_ = State::multi;
        queued_ = 0;
      }
      break;
    case StateChange::discard:
      subscribe_queued_ = false;
      [[fallthrough]];
    case StateChange::exec:
      // Both end any WATCH too; outside a transaction Redis just answers with an error, and
      // the keys stay watched.
      if (in_multi()) {
        state_ = State::plain;
        pins_ &= ~kWatching;
      }
      break;
    case StateChange::watch:
      // Inside MULTI it is Redis's error. A subscribed client's WATCH (RESP3) outlives the
      // subscription, as in Redis.
      if (in_multi()) break;
      pins_ |= kWatching;
      if (state_ == State::plain) state_ = State::watching;
      break;
    case StateChange::unwatch:
      if (in_multi()) break;
      pins_ &= ~kWatching;
      if (state_ == State::watching) state_ = State::plain;
      break;
    case StateChange::tracking:
      pins_ = iequals(argv[2], "on") ? pins_ | kTracking : pins_ & ~kTracking;
      break;
    case StateChange::no_evict:
      no_evict_ = argv.size() > 2 && iequals(argv[2], "on");
      pins_ |= kSticky;
      break;
    case StateChange::session:
      pins_ |= kSticky;
      break;
    case StateChange::monitor:
      pins_ |= kSticky;
      state_ = State::tunnel;
      break;
    case StateChange::replica_stream:
      // The state alone holds the link: a refusal then leaves only what a REPLCONF pinned.
      state_ = State::replica;
      break;
    case StateChange::subscribe:
      // Queued in MULTI, it subscribes only if EXEC runs (take_queued_subscribe).
      in_multi() ? void(subscribe_queued_ = true) : void(state_ = State::subscribed);
      break;
    case StateChange::none:
    case StateChange::reply_mode:  // emulated by Corral: Redis's connection never sees it
    case StateChange::select:
    case StateChange::quit:
    case StateChange::reset:
      break;
  }
}

void ConnectionMode::refused_in_multi() {
  if (state_ == State::multi) state_ = State::multi_aborted;
}

void ConnectionMode::ended_subscriptions() {
  // Keys watched before SUBSCRIBE stay watched on this connection: its EXEC must see them.
  if (state_ == State::subscribed) state_ = (pins_ & kWatching) ? State::watching : State::plain;
}

void ConnectionMode::reset() {
  state_ = State::plain;
  pins_ = 0;
  subscribe_queued_ = false;
}

void release_dedicated(ClientState& client) {
  if (client.dedicated) {
    // Closing must not reach the client as a lost subscription: it no longer has one.
    client.dedicated->set_unsolicited_target(nullptr);
    client.dedicated->close();
    client_registry().clear_upstream_client(client.id);
  }
  if (client.kept.link) {
    client.kept.link->close();
    client_registry().clear_upstream_client(client.id);
  }
  client.kept = {};
  client.dedicated.reset();
  client.dedicated_blocked = false;
  client.blocking_replies_due.reset();
  end_tracking_redirect(client);
  client.mode.reset();
  client.queued_write_keys.clear();
  client.queued_flush_all = false;
  client.queued_database = -1;  // a transaction lost with its connection runs nothing
  client.acl_change_queued = false;
  client.database_after_exec.reset();
  client.tunnel_barriers_due = 0;
  client.tunnel_checked = false;
  client.last_confirmation_ended = false;
  client.subscriptions = {};
  client.cluster_slot = -1;
  client.held_commands.clear();
  // Their confirmations will not come now: answer their slots rather than leave them waiting.
  for (auto& [tag, target] : std::exchange(client.pushed_requests, {})) {
    target->on_failure(tag, upstream::kErrConnectionLost);
  }
}

}  // namespace corral::proxy
