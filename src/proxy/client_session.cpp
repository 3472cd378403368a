// ClientSession: the session seam's calls mapped onto the dispatcher, with the client's state.
#include "proxy/client_session.hpp"

#include "proxy/links/blocking_session.hpp"
#include "proxy/local/forwarded_pause.hpp"
#include "proxy/local/pause_hold.hpp"
#include "proxy/local/queued_local.hpp"

namespace corral::proxy {

class ClientSession::ExecRunner final : public QueuedLocalRunner {
 public:
  explicit ExecRunner(ClientSession& session) : session_(session) {}
  void run_queued(std::span<const std::string_view> argv, std::string& answer) override {
    session_.dispatcher_.run_queued_local(session_.state_, argv, answer);
    session_.publish();  // a CLIENT SETNAME's name
  }
  void ran_in_exec(std::span<const std::string_view> argv, bool taken) override {
    pause_ran_in_exec(argv, taken, &session_.dispatcher_.upstream_for(session_.state_));
  }
  void merge_queued(std::span<const std::string_view> argv, std::string_view upstream_answer,
                    std::string& answer) override {
    session_.dispatcher_.merge_queued_local(session_.state_, argv, upstream_answer, answer);
  }
  void exec_answered() override { --session_.execs_running_locals_; }

 private:
  ClientSession& session_;
};

ClientSession::ClientSession(Dispatcher& dispatcher, std::uint64_t id, const session::Peer& peer)
    : dispatcher_(dispatcher), exec_runner_(std::make_shared<ExecRunner>(*this)) {
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
  // Aliases the record, which so outlives every blocking command still counting in it.
  state_.shown_blocked = std::shared_ptr<std::atomic<int>>(record_, &record_->blocked_commands);
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
  show_command(resolved);
  bool held = held_by_pause(request, resolved);
  if (held || waits_behind_held_) {
    held = client_registry().waits_for_pause(state_.id, held);
    waits_behind_held_ = held;
  }
  record_->held_by_pause.store(held, std::memory_order_relaxed);
  if (held) return Action::wait_then_retry;
  if (execs_running_locals_ > 0 && awaiting > 0 && resolved.spec != nullptr &&
      resolved.row().route == Route::local) {
    return Action::drain_then_retry;
  }
  const bool was_in_multi = state_.mode.in_multi();
  Action action;
  using Kind = QueuedLocalCommands::Kind;
  auto queueing = was_in_multi ? queueing_in_multi(request, resolved) : std::nullopt;
  // Redis checks an upstream ACL user's rights as it queues: the placeholder's command, which
  // Redis never sees, is checked here.
  const auto refused =
      queueing == Kind::placeholder
          ? dispatcher_.refuse_without_rights(state_, resolved.row(), request.argv, tag, target)
          : std::nullopt;
  if (refused) {
    action = *refused;
    queueing.reset();
  } else if (queueing == Kind::placeholder) {
    const std::string_view placeholder[] = {"PING"};
    const Request in_its_place{placeholder, QueuedLocalCommands::kPlaceholder};
    action = dispatcher_.handle(state_, in_its_place, dispatcher_.resolve(in_its_place), tag,
                                target, awaiting);
  } else if (resolved.spec != nullptr && resolved.row().change == StateChange::exec &&
             !queued_locals_.empty()) {
    action = dispatcher_.handle(state_, request, resolved, tag,
                                queued_locals_.run_at_exec(target, exec_runner_), awaiting);
    if (action != Action::wait_then_retry && action != Action::drain_then_retry) {
      ++execs_running_locals_;
    }
  } else {
    action = dispatcher_.handle(state_, request, resolved, tag, target, awaiting);
  }
  if (queueing && action != Action::wait_then_retry && action != Action::drain_then_retry) {
    queued_locals_.add(queued_commands_, request.argv, *queueing);
  }
  // A request asked to come again (a command name the upstream is asked about) is not queued yet.
  if (action != Action::wait_then_retry && action != Action::drain_then_retry) {
    follow_scripts_and_queue(request, resolved, was_in_multi);
  }
  publish();
  return action;
}

// As Redis's processCommand: a command that is wrong anyway (unknown, wrong arity) is answered at
// once; EXEC is held when its transaction queued what the pause holds; CLIENT UNPAUSE never is
// (it is how an operator ends a pause early).
bool ClientSession::held_by_pause(const Request& request, const Resolved& resolved) const {
  if (resolved.spec == nullptr || !client_registry().paused()) return false;
  const CommandSpec& row = resolved.row();
  if (!arity_ok(*resolved.spec, request.argv.size()) ||
      (resolved.sub && !arity_ok(*resolved.sub, request.argv.size())) ||
      row.name == "client|unpause") {
    return false;
  }
  std::uint32_t flags = (row.flags & ~(kWrite | kMayReplicate)) | pause_flags(row, request.argv);
  if (row.change == StateChange::exec) flags |= queued_pause_flags_;
  return client_registry().holds(flags);
}

void ClientSession::follow_scripts_and_queue(const Request& request, const Resolved& resolved,
                                             bool was_in_multi) {
  if (resolved.spec == nullptr) return;
  const CommandSpec& row = resolved.row();
  // Scripts that declare flags, remembered for EVALSHA under a later pause.
  if ((row.name == "eval" || row.name == "script|load") && request.argv.size() >= 3) {
    const std::string_view body = request.argv[row.name == "eval" ? 1 : 2];
    if (body.starts_with("#!")) remember_script(body);
  }
  if (!state_.mode.in_multi()) {
    queued_pause_flags_ = 0;
    queued_commands_ = 0;
    queued_locals_.clear();
  } else if (was_in_multi && row.change != StateChange::multi && row.change != StateChange::watch) {
    // Redis answers a nested MULTI and a WATCH inside MULTI at once, with an error that leaves
    // the transaction as it was: EXEC's reply has no element for them.
    queued_pause_flags_ |= pause_flags(row, request.argv);
    ++queued_commands_;
  }
}

// Redis queues every command it answers itself inside MULTI and runs it in EXEC; Corral too for
// the local rows marked kRunsAtExec or kMergedAtExec, when it may answer them. A placeholder's
// command runs in Corral only (an upstream ACL user's rights are checked by handle()); one
// forwarded as itself (CLIENT PAUSE, INFO) Redis checks.
std::optional<QueuedLocalCommands::Kind> ClientSession::queueing_in_multi(
    const Request& request, const Resolved& resolved) const {
  using Kind = QueuedLocalCommands::Kind;
  if (resolved.spec == nullptr) return std::nullopt;
  const CommandSpec& row = resolved.row();
  // The commands Redis queues for itself (most of a transaction) leave at the first test.
  if (!(row.flags & (kRunsAtExec | kMergedAtExec))) return std::nullopt;
  if (!arity_ok(*resolved.spec, request.argv.size()) ||
      (resolved.sub && !arity_ok(*resolved.sub, request.argv.size())) ||
      dispatcher_.refuses(resolved)) {
    return std::nullopt;
  }
  if (dispatcher_.merges_at_exec(state_, row)) return Kind::merged;
  if (!(row.flags & kRunsAtExec)) return std::nullopt;
  if (row.flags & kQueuedInMulti) return Kind::forwarded;
  return Kind::placeholder;
}

Action ClientSession::handle_tunnel(const Request& request, std::string& reply) {
  const Action action = dispatcher_.handle_tunnel(state_, request, reply);
  show_command(dispatcher_.resolve(request));
  publish();
  return action;
}

bool ClientSession::takes_unsolicited(std::string_view reply) {
  if (!dispatcher_.takes_unsolicited(state_, reply)) return false;
  record_->pubsub.store(state_.mode.in_pubsub() || state_.mode.tunneling() || state_.monitoring,
                        std::memory_order_relaxed);
  return true;
}

session::RelayVerdict ClientSession::relay_verdict() {
  const auto verdict = dispatcher_.relay_verdict(state_);
  if (verdict == session::RelayVerdict::refused ||
      verdict == session::RelayVerdict::refused_unanswered) {
    publish();  // CLIENT LIST: no flags=S now
  }
  return verdict;
}

void ClientSession::on_unsolicited(std::string_view reply) {
  dispatcher_.on_unsolicited(state_, reply);
  record_->pubsub.store(state_.mode.in_pubsub() || state_.mode.tunneling() || state_.monitoring,
                        std::memory_order_relaxed);
  publish_subscriptions();
}

void ClientSession::publish_subscriptions() {
  const SubscriptionCounts& counts = state_.subscriptions;
  record_->channels.store(counts.channels, std::memory_order_relaxed);
  record_->patterns.store(counts.patterns, std::memory_order_relaxed);
  record_->shard_channels.store(counts.shard_channels, std::memory_order_relaxed);
  subscriptions_shown_ = counts.channels != 0 || counts.patterns != 0 || counts.shard_channels != 0;
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

void ClientSession::show_command(const Resolved& resolved) {
  if (resolved.spec != nullptr) {
    record_->last_command.store(&resolved.row(), std::memory_order_relaxed);
  }
}

void ClientSession::publish() {
  record_->last_active_ms.store(ClientRegistry::now_ms(), std::memory_order_relaxed);
  record_->database.store(state_.database, std::memory_order_relaxed);
  record_->protocol.store(state_.protocol, std::memory_order_relaxed);
  record_->pubsub.store(state_.mode.in_pubsub() || state_.mode.tunneling() || state_.monitoring,
                        std::memory_order_relaxed);
  record_->monitoring.store(state_.monitoring, std::memory_order_relaxed);
  record_->tracking.store(state_.mode.tracking(), std::memory_order_relaxed);
  record_->no_evict.store(state_.mode.no_evict(), std::memory_order_relaxed);
  record_->queued_in_multi.store(state_.mode.queued(), std::memory_order_relaxed);
  // Counts change with confirmations (on_unsolicited) and drop to 0 when the link is released:
  // a client that holds none costs this test alone per request.
  if (subscriptions_shown_) publish_subscriptions();
  record_->replica.store(state_.mode.relaying(), std::memory_order_relaxed);
  if (state_.name != published_name_) {
    published_name_ = state_.name;
    client_registry().set_name(state_.id, published_name_);
  }
  if (state_.upstream_user != published_user_) {
    published_user_ = state_.upstream_user;
    client_registry().set_user(state_.id, published_user_);
  }
}

}  // namespace corral::proxy
