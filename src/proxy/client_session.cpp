// ClientSession: the session seam's calls mapped onto the dispatcher, with the client's state.
#include "proxy/client_session.hpp"

#include "proxy/links/blocking_session.hpp"

namespace corral::proxy {

ClientSession::ClientSession(Dispatcher& dispatcher, std::uint64_t id, const session::Peer& peer)
    : dispatcher_(dispatcher) {
  const auto& client = dispatcher_.client_settings();
  state_.id = id;
  state_.authenticated = client.password.empty();
  state_.admin = client.admin_password.empty();
  record_ = client_registry().add(id, peer.addr, peer.laddr, peer.close, peer.close_if_idle,
                                  peer.post, peer.buffers, peer.show_buffers);
  if (peer.post) {
    state_.push = [post = peer.post](std::string bytes) {
      post([bytes = std::move(bytes)](upstream::ReplyTarget& out) { out.on_reply(0, bytes); });
    };
  }
  state_.addr = peer.addr;
}

ClientSession::~ClientSession() { client_registry().remove(state_.id); }

session::Classified ClientSession::classify(const Request& request) {
  const Resolved resolved = dispatcher_.resolve(request);
  return {static_cast<std::uint32_t>(resolved.metric_id), resolved.spec, resolved.sub};
}

Action ClientSession::handle(const Request& request, const session::Classified& classified,
                             std::uint64_t tag,
                             const std::shared_ptr<upstream::ReplyTarget>& target,
                             std::size_t awaiting) {
  Resolved resolved{static_cast<const CommandSpec*>(classified.command),
                    static_cast<const CommandSpec*>(classified.detail), classified.metric_id};
  // A retried request whose name was unknown may have been learned from the upstream since.
  if (resolved.spec == nullptr) resolved = dispatcher_.resolve(request);
  // CLIENT UNPAUSE is never held: it is how an operator ends a pause early.
  if (resolved.spec != nullptr && client_registry().holds(resolved.row().flags) &&
      resolved.row().name != "client|unpause") {
    return Action::wait_then_retry;
  }
  // CLIENT LIST / INFO show the command running, themselves included, as Redis does.
  if (resolved.spec != nullptr) {
    record_->last_command.store(&resolved.row(), std::memory_order_relaxed);
  }
  const Action action = dispatcher_.handle(state_, request, resolved, tag, target, awaiting);
  publish(resolved);
  return action;
}

Action ClientSession::handle_tunnel(const Request& request, std::string& reply) {
  const Action action = dispatcher_.handle_tunnel(state_, request, reply);
  publish(dispatcher_.resolve(request));
  return action;
}

bool ClientSession::takes_unsolicited(std::string_view reply) {
  if (!dispatcher_.takes_unsolicited(state_, reply)) return false;
  record_->pubsub.store(state_.mode.in_pubsub() || state_.mode.tunneling() || state_.monitoring,
                        std::memory_order_relaxed);
  return true;
}

void ClientSession::on_unsolicited(std::string_view reply) {
  dispatcher_.on_unsolicited(state_, reply);
  record_->pubsub.store(state_.mode.in_pubsub() || state_.mode.tunneling() || state_.monitoring,
                        std::memory_order_relaxed);
}

void ClientSession::end_session() {
  dispatcher_.end_session(state_);
  client_registry().remove(state_.id);
}

void ClientSession::drain() {
  // A transaction or WATCH ends by itself: its EXEC is in flight (and answered) or will never be
  // sent. A blocked command or a subscription would hold the process until shutdown_timeout: its
  // connection is closed now, which answers the blocked request with an error. A blocked command
  // ends with its client even under WATCH or tracking (state that leaves with the client too), as
  // Redis frees such a client: left blocked, it would take the next element pushed for nobody.
  if (!state_.dedicated) return;
  if (state_.mode.holds_redis_state() && !blocked_in_redis(state_)) return;
  dispatcher_.end_session(state_);
}

bool ClientSession::blocked() const { return blocked_in_redis(state_); }

void ClientSession::publish(const Resolved& resolved) {
  record_->last_active_ms.store(ClientRegistry::now_ms(), std::memory_order_relaxed);
  if (resolved.spec != nullptr) {
    record_->last_command.store(&resolved.row(), std::memory_order_relaxed);
  }
  record_->database.store(state_.database, std::memory_order_relaxed);
  record_->protocol.store(state_.protocol, std::memory_order_relaxed);
  record_->pubsub.store(state_.mode.in_pubsub() || state_.mode.tunneling() || state_.monitoring,
                        std::memory_order_relaxed);
  record_->monitoring.store(state_.monitoring, std::memory_order_relaxed);
  record_->in_multi.store(state_.mode.in_multi(), std::memory_order_relaxed);
  if (state_.name != published_name_) {
    published_name_ = state_.name;
    client_registry().set_name(state_.id, published_name_);
  }
}

}  // namespace corral::proxy
