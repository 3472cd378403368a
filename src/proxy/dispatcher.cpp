// Request routing: checks (known, arity, auth, allowed), local answers, and the choice between the
// thread's shared upstream connection and a dedicated one, read from the command table's route
// and state-change columns: no command is named here.
#include "proxy/dispatcher.hpp"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cstdlib>

#include "proxy/ascii.hpp"
#include "proxy/client_session.hpp"
#include "proxy/commands/command_shape.hpp"
#include "proxy/errors.hpp"
#include "proxy/links/blocking_session.hpp"
#include "proxy/links/client_unblock.hpp"
#include "proxy/links/partitioned_transaction.hpp"
#include "proxy/links/queued_select.hpp"
#include "proxy/links/subscriptions.hpp"
#include "proxy/links/tracking_redirect.hpp"
#include "proxy/links/transaction_endings.hpp"
#include "proxy/local/latency_histogram_reply.hpp"
#include "proxy/local/local_commands.hpp"
#include "proxy/local/local_latency.hpp"
#include "proxy/local/monitor_feed.hpp"
#include "proxy/local/slowlog_config.hpp"
#include "proxy/resp3.hpp"
#include "resp/encoder.hpp"
#include "stampede/read/cached_command.hpp"
#include "stampede/read/read_through.hpp"
#include "upstream/errors.hpp"
#include "upstream/link.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {

bool has_argument(std::span<const std::string_view> argv, std::string_view word) {
  return std::any_of(argv.begin() + 1, argv.end(),
                     [word](std::string_view arg) { return iequals(arg, word); });
}

// Clears the cache again when Redis confirms a flush, voiding fetches that raced it.
class FlushOnReply : public upstream::ReplyTarget {
 public:
  FlushOnReply(std::shared_ptr<upstream::ReplyTarget> client, stampede::ReadThrough& cache)
      : client_(std::move(client)), cache_(cache) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    cache_.flush_all();
    client_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    cache_.flush_all();
    client_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
  stampede::ReadThrough& cache_;
};

// Per io thread; a verdict is one DRYRUN to learn again, so dropping them all when full is cheap.
constexpr std::size_t kMaxAclVerdicts = 65536;

std::string normalized_command_name(std::string_view configured) {
  std::string name;
  for (char c : configured) {
    name.push_back(c == ' ' ? '|' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return name;
}
}  // namespace

Dispatcher::Dispatcher(const config::Settings& settings, upstream::Upstream& upstream,
                       ProcessInfo& info, stampede::ReadThrough* read_through,
                       stampede::CacheRuntime* cache)
    : settings_(settings),
      upstream_(upstream),
      info_(info),
      read_through_(read_through),
      cache_(cache),
      user_auth_(upstream),
      acl_verdicts_(upstream, kMaxAclVerdicts) {
  apply_client_settings(settings.client);
}

void Dispatcher::apply_client_settings(const config::ClientSettings& client) {
  client_ = client;
  refused_flags_ = kDangerous | (client.refuse_scripts ? kRunsScript : 0u);
  allowed_.clear();
  for (const auto& allowed : client.allow_commands) {
    allowed_.push_back(normalized_command_name(allowed));
  }
}

void Dispatcher::set_hot_keys(stampede::HotKeys* keys, std::size_t thread) {
  hot_keys_ = keys;
  hot_sampler_.reset();
  if (keys != nullptr) hot_sampler_.emplace(*keys, thread, 0x9e3779b97f4a7c15ULL * (thread + 1));
}

// Only the first key of a command is counted: the one a single-key read or write names, and
// for a multi-key one, a fair sample of its keys across many requests.
void Dispatcher::sample_hot_key(const CommandSpec& row, std::span<const std::string_view> argv) {
  const bool writes = row.flags & kWrite;
  const bool reads = row.flags & kReadOnly;
  if ((!writes && !reads) || row.first_key <= 0 ||
      static_cast<std::size_t>(row.first_key) >= argv.size()) {
    hot_sampler_->skip();
    return;
  }
  hot_sampler_->count(writes ? stampede::HotKeyKind::write : stampede::HotKeyKind::read,
                      argv[static_cast<std::size_t>(row.first_key)]);
}

std::size_t Dispatcher::metric_id_count() { return all_commands().size() + 1; }

std::string Dispatcher::metric_name(std::size_t metric_id) {
  const auto table = all_commands();
  return metric_id < table.size() ? std::string(table[metric_id].name) : std::string("unknown");
}

std::unique_ptr<session::ClientHandler> Dispatcher::open_session() {
  return std::make_unique<ClientSession>(
      *this, info_.next_client_id.fetch_add(1, std::memory_order_relaxed));
}

std::unique_ptr<session::ClientHandler> Dispatcher::open_session(const session::Peer& peer) {
  return std::make_unique<ClientSession>(
      *this, info_.next_client_id.fetch_add(1, std::memory_order_relaxed), peer);
}

std::uint32_t Dispatcher::protocol_error_metric() const {
  return static_cast<std::uint32_t>(metric_id_count() - 1);
}

Resolved Dispatcher::resolve(const Request& request) const {
  Resolved resolved;
  resolved.metric_id = all_commands().size();
  resolved.spec = find_command(request.argv[0]);
  if (resolved.spec == nullptr) return resolved;
  if (request.argv.size() >= 2) resolved.sub = find_subcommand(*resolved.spec, request.argv[1]);
  resolved.metric_id = command_id(resolved.row());
  return resolved;
}

bool Dispatcher::command_allowed(const Resolved& resolved) const {
  return std::any_of(allowed_.begin(), allowed_.end(), [&](const std::string& allowed) {
    return allowed == resolved.spec->name || (resolved.sub && allowed == resolved.sub->name);
  });
}

bool Dispatcher::refuses(const Resolved& resolved) const {
  return ((resolved.spec->flags | (resolved.sub ? resolved.sub->flags : 0)) & refused_flags_) &&
         !command_allowed(resolved);
}

Action Dispatcher::handle_command(ClientState& client, const Request& request,
                                  const Resolved& resolved, std::uint64_t tag,
                                  const std::shared_ptr<upstream::ReplyTarget>& target,
                                  std::size_t awaiting) {
  scratch_.clear();
  apply_database_after_exec(client);
  const auto argv = request.argv;
  if (resolved.spec == nullptr) {
    // The upstream may know it (a renamed command): the request waits for the answer, in order.
    // Only for authenticated clients: others must not make Corral query the upstream.
    if (client.authenticated &&
        lookup_.lookup(argv[0], upstream_) == CommandLookup::Answer::ask_later) {
      return Action::wait_then_retry;
    }
    append_unknown_command(scratch_, argv);
  } else if (!arity_ok(*resolved.spec, argv.size()) ||
             (resolved.sub && !arity_ok(*resolved.sub, argv.size()))) {
    append_wrong_arity(scratch_, resolved.row().name);
  } else if (!client.authenticated && !(resolved.row().flags & kNoAuth)) {
    append_noauth(scratch_);
  } else if (refuses(resolved)) {
    append_not_allowed(scratch_, resolved.row().name);
  } else if (resolved.row().route == Route::refused) {
    append_refused(scratch_, resolved.row().name);
  } else if (client.monitoring && (resolved.row().flags & (kWrite | kReadOnly | kMayReplicate))) {
    // Redis's monitor is a replica, which may not touch the keyspace.
    resp::append_error(scratch_, "ERR Replica can't interact with the keyspace");
  } else if (resolved.row().route == Route::local && client.mode.in_multi() &&
             !(resolved.row().flags & kQueuedInMulti) && !merges_at_exec(client, resolved.row()) &&
             !answered_by_redis(resolved.row()) && resolved.row().change != StateChange::quit &&
             resolved.row().change != StateChange::reset) {
    // Forwarded, it would be answered by the upstream: its credentials, its clients, its INFO.
    append_local_in_multi(scratch_, resolved.row().name);
  } else {
    const auto& row = resolved.row();
    // Inside MULTI, Redis queues the local commands it answers alike (their replies belong in
    // EXEC's), but never those that end or reset the connection; SELECT on a dedicated connection
    // must reach it too.
    const bool redis_must_see = (client.mode.in_multi() && row.change != StateChange::quit &&
                                 row.change != StateChange::reset) ||
                                (row.change == StateChange::select && client.dedicated);
    const Action action = row.route == Route::local && !redis_must_see
                              ? answer_locally(client, request, row, tag, target, awaiting)
                          : row.change == StateChange::tracking
                              ? forward_tracking(client, request, row, tag, target, awaiting)
                          : row.route == Route::replication
                              ? forward_replication(client, request, row, tag, target, awaiting)
                              : forward(client, request, row, tag, target, awaiting);
    // Shown once it runs (a request asked to wait comes back), with the database it left.
    if (monitor_feed().active() && action != Action::wait_then_retry &&
        action != Action::drain_then_retry) {
      monitor_feed().feed(row, client.database, client.addr, argv);
    }
    return action;
  }
  client.mode.refused_in_multi();
  target->on_reply(tag, scratch_);
  return Action::done;
}

Dispatcher::Path Dispatcher::path_for(const CommandSpec& row,
                                      std::span<const std::string_view> argv, bool pushes_confirm) {
  if (pushes_confirm && replies_with_pushes(row)) return Path::pushed;
  switch (row.route) {
    case Route::shared:
    case Route::local:  // one that Redis must see after all
      return Path::shared;
    case Route::dedicated:
      return Path::dedicated;
    case Route::blocking_if_argument:
      return has_argument(argv, "block") ? Path::dedicated : Path::shared;
    case Route::tunnel:
      return Path::tunnel;
    case Route::out_of_band:
      return Path::out_of_band;
    case Route::refused:      // answered by handle() before any path is chosen
    case Route::replication:  // forward_replication()
      assert(false);
      break;
  }
  return Path::shared;
}

std::string_view Dispatcher::wire_bytes(const Request& request) {
  if (!request.raw.empty()) return request.raw;
  scratch_.clear();
  resp::append_command(scratch_, request.argv);
  return scratch_;
}

Action Dispatcher::forward_tracking(ClientState& client, const Request& request,
                                    const CommandSpec& row, std::uint64_t tag,
                                    const std::shared_ptr<upstream::ReplyTarget>& target,
                                    std::size_t awaiting) {
  const TrackingPlan plan = plan_tracking(client, upstream_for(client), upstream_.partitioned(),
                                          request.argv, target, scratch_);
  if (plan.step == TrackingStep::wait) return Action::wait_then_retry;
  if (plan.step == TrackingStep::answered) {
    client.mode.refused_in_multi();
    target->on_reply(tag, scratch_);
    return Action::done;
  }
  const std::vector<std::string_view> argv(plan.argv.begin(), plan.argv.end());
  const Request rewritten{argv, {}};
  const Action action = forward(client, plan.argv.empty() ? request : rewritten, row, tag, target,
                                awaiting, plan.reply_to);
  if (client.tracking_redirect && client.dedicated) {
    client.tracking_redirect->bind_tracker_link(client.dedicated);
  }
  return action;
}

Action Dispatcher::forward(ClientState& client, const Request& request, const CommandSpec& row,
                           std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                           std::size_t awaiting,
                           const std::shared_ptr<upstream::ReplyTarget>& answer) {
  auto& client_upstream = upstream_for(client);
  // A countdown per request; a key is looked at only when it reaches zero.
  if (hot_sampler_ && hot_sampler_->due()) sample_hot_key(row, request.argv);
  if (client.dedicated && client.dedicated->state() == upstream::Link::State::closed) {
    const bool in_multi = client.mode.in_multi();
    // A link that never reached Redis failed every command sent on it: the client has had its
    // error for the WATCH (or tracking) it asked for, which Redis never held. A transaction is
    // still refused to the end, and a MULTI still opens doomed.
    const bool state_lost =
        client.mode.holds_redis_state() &&
        (in_multi || row.change == StateChange::multi || client.dedicated->reached_server());
    release_dedicated(client);
    if (state_lost && row.change == StateChange::multi && !in_multi) {
      // MULTI on a lost WATCH (or tracking state): the transaction opens, doomed, as one whose
      // watched key changed; the client learns why from the errors its queued commands get.
      client.mode.lost_transaction();
      scratch_.clear();
      resp::append_simple(scratch_, "OK");
      target->on_reply(tag, scratch_);
      return Action::done;
    }
    if (state_lost) {
      // The client is still queueing: its next commands must not run one by one elsewhere.
      if (in_multi && row.change != StateChange::exec && row.change != StateChange::discard) {
        client.mode.lost_transaction();
      }
      target->on_failure(tag, upstream::kErrStateLost);
      return Action::done;
    }
  }
  if (client.mode.state() == ConnectionMode::State::multi_lost) {
    return answer_lost_transaction(client, row, tag, target);
  }
  // Inside MULTI, Redis answers even a RESP3 SUBSCRIBE with +QUEUED: an ordinary reply.
  Path path = path_for(row, request.argv, client.protocol == kResp3 && !client.mode.in_multi());
  if (row.change == StateChange::select) {
    // SELECT reaches Redis only on the client's own connection (a shared one's database is other
    // clients' too), and outside MULTI only with an index Redis accepts: the session follows it.
    if (!client.mode.in_multi() && database_index(request.argv[1]) < 0) {
      return answer_locally(client, request, row, tag, target, awaiting);  // Redis's error
    }
    path = Path::dedicated;
  }
  const TableShape shape(row);
  const upstream::Routed command{shape,           request.argv, wire_bytes(request),
                                 client.database, client.id,    client.protocol};
  // A client holding a connection (in MULTI ...) keeps it: Redis must see the command there.
  if (path == Path::out_of_band && !client.dedicated) {
    if (!client_upstream.send_out_of_band(command, tag, target)) {
      target->on_failure(tag, upstream::kErrUnavailable);
    }
    return Action::done;
  }
  // A RESP2 client that is not subscribed has no subscriptions to drop: Redis would answer one
  // reply per channel, which a shared connection would match to other clients' commands.
  if (path == Path::shared && !client.mode.in_multi() && is_unsubscribe(row)) {
    std::string replies;
    append_unsubscribed_replies(replies, row.name, request.argv);
    target->on_reply(tag, replies);
    return Action::done;
  }
  if (AclVerdicts::changes_rules(row)) {
    forget_acl_rules();  // for this io thread's next check already; see below for the rest
    if (client.mode.in_multi()) client.acl_change_queued = true;
  }
  if (upstream_.partitioned()) {
    // A session link serves one partition: once it holds no state, the next command (maybe for
    // another partition) goes without it, after the client's earlier replies.
    if (client.dedicated && !client.mode.holds_connection()) {
      if (awaiting > 0) return Action::drain_then_retry;
      if (client.dedicated->in_flight() == 0) set_dedicated_aside(client);
    }
    switch (partitioned_transaction_step(client_upstream, client, row, command, tag, target)) {
      case TransactionStep::answered:
        return Action::done;
      case TransactionStep::link_failing:
        if (waits_for_failover(client, upstream::ErrorKind::failing_over)) {
          return Action::wait_then_retry;
        }
        fail_transaction_link(client, tag, target, upstream::kErrPrimaryFailing);
        return Action::done;
      case TransactionStep::forward:
        client.link_wait_since = {};
        break;
    }
  }
  switch (acquire_dedicated(client, path, awaiting, command)) {
    case LinkStep::drain:
      return Action::drain_then_retry;
    case LinkStep::wait:
      return Action::wait_then_retry;
    case LinkStep::ready:
      break;
  }
  // Shared connections are per database and protocol: after a SELECT or HELLO the client's next
  // command goes out on another one, where it could overtake the commands still in flight on the
  // last (a SCRIPT EXISTS ran before the EVAL sent ahead of it, found by the differential test).
  if (!client.dedicated && awaiting > 0 &&
      (client.database != client.shared_database || client.protocol != client.shared_protocol)) {
    return Action::drain_then_retry;
  }
  if (path != Path::shared && !client.dedicated) {  // keys on several servers, or none serves
    client.mode.refused_in_multi();                 // their partition
    if (client_upstream.partition_of(command) == upstream::kSpansPartitions) {
      client_upstream.note_cross_partition_refusal();
      std::string error;
      resp::append_error(error, client_upstream.cross_partition_error());
      target->on_reply(tag, error);
    } else {
      target->on_failure(tag, upstream::kErrUnavailable);
    }
    return Action::done;
  }
  if (row.change == StateChange::exec &&
      client.mode.state() == ConnectionMode::State::multi_aborted && client.dedicated) {
    return abort_transaction(client, tag, target);
  }
  // The cache holds the upstream's configured database only; other databases pass through.
  const bool cacheable = read_through_ && client.database == upstream_.database();
  if (cacheable && !client.dedicated && (row.flags & kReadOnly) &&
      may_serve_cached(client, row, request.argv) &&
      read_through_->handle_read(
          row.name, request.argv, tag,
          client.protocol == kResp3 ? resp3_target(target, row.name, request.argv) : target)) {
    return Action::done;
  }
  if (cacheable && (row.flags & kWrite) && !(row.flags & kDeletesKeys)) {
    key_indices(row, request.argv, keys_);
    if (auto refusal = read_through_->refused_write(request.argv, keys_)) {
      client.mode.refused_in_multi();
      target->on_failure(tag, *refusal);
      return Action::done;
    }
  }
  auto reply_to = answer      ? answer
                  : cacheable ? invalidating_target(client, row, request, target)
                              : target;
  if (row.change == StateChange::exec) reply_to = select_at_exec(client, std::move(reply_to));
  // Queued in MULTI, its +OK would be inside EXEC's reply: Corral's log then keeps its settings.
  if (slowlog_ != nullptr && row.name == "config|set" && !client.mode.in_multi()) {
    reply_to = follow_slowlog_config(request.argv, *slowlog_, std::move(reply_to));
  }
  if (follows_local_latency(row) && !client.mode.in_multi()) {
    reply_to = follow_local_latency(row, request.argv, local_latency(), std::move(reply_to));
  }
  if (row.change == StateChange::discard) client.queued_database = -1;
  // An ACL change forgets what was learned of the rules again once it has run (queued: once
  // EXEC has): a verdict learned while it was on its way was of the old rules.
  if (AclVerdicts::changes_rules(row) && !client.mode.in_multi()) {
    reply_to = forget_acl_rules_at_reply(std::move(reply_to));
  } else if (row.change == StateChange::exec || row.change == StateChange::discard) {
    if (std::exchange(client.acl_change_queued, false) && row.change == StateChange::exec) {
      reply_to = forget_acl_rules_at_reply(std::move(reply_to));
    }
  }
  const auto& named =
      client.tracking_redirect ? redirect_naming_target(client, row, reply_to) : reply_to;
  if (!send(client, row, command, path, tag, named, target)) {
    target->on_failure(tag, upstream::kErrUnavailable);
  }
  return Action::done;
}

bool Dispatcher::may_serve_cached(const ClientState& client, const CommandSpec& row,
                                  std::span<const std::string_view> argv) {
  return !client.user_upstream || (stampede::find_cached_command(row.name) &&
                                   acl_verdicts_.may_serve_cached(client.upstream_user, row, argv));
}

bool Dispatcher::send(ClientState& client, const CommandSpec& row, const upstream::Routed& command,
                      Path path, std::uint64_t tag,
                      const std::shared_ptr<upstream::ReplyTarget>& reply_to,
                      const std::shared_ptr<upstream::ReplyTarget>& target) {
  const auto bytes = command.bytes;
  if (!client.dedicated) {
    client.shared_database = client.database;
    client.shared_protocol = client.protocol;
    return upstream_for(client).send(command, tag, reply_to);
  }
  // Only the dedicated connection carries state for the client; Redis validates SELECT, and the
  // session follows so that a later shared connection uses the same database.
  if (row.change == StateChange::select) {
    // Queued in MULTI it runs at EXEC, if EXEC runs the transaction; a bad index changes nothing.
    if (const int index = database_index(command.argv[1]); index >= 0) {
      (client.mode.in_multi() ? client.queued_database : client.database) = index;
      // A SELECT after an EXEC still in flight wins over the transaction's own.
      if (!client.mode.in_multi()) client.database_after_exec.reset();
    }
  }
  const bool was_tunneling = client.mode.tunneling();
  // Redis never sees a command the link refuses: the state it would have set is not the client's
  // (a WATCH answered "upstream unavailable" must not fail the client's next command as a lost
  // WATCH).
  const ConnectionMode before = client.mode;
  if (path == Path::pushed) {
    client.mode.keep_for_pushes();
  } else {
    client.mode.apply(row.change, command.argv);
  }
  // EXEC runs a SUBSCRIBE queued in MULTI: the client is subscribed after its reply.
  if (row.change == StateChange::exec && client.mode.take_queued_subscribe()) {
    client.protocol == kResp3 ? client.mode.keep_for_pushes() : client.mode.entered_subscriptions();
    path = client.protocol == kResp3 ? path : Path::tunnel;
  }
  // A RESP3 connection pushes (messages, invalidations) while the client is subscribed or
  // tracking; those modes hold the connection, and losing it must reach the client as an error.
  if (path == Path::tunnel || (client.protocol == kResp3 && client.mode.holds_connection())) {
    client.dedicated->set_unsolicited_target(pushes_to_ != nullptr ? *pushes_to_ : target);
  }
  if (path == Path::pushed) {
    if (!client.dedicated->send_untracked(bytes)) {
      client.mode = before;
      return false;
    }
    client.pushed_requests.emplace_back(tag, target);
    return true;
  }
  const bool exempt = (row.flags & kBlocking) || path == Path::tunnel;
  const auto kind = row.change == StateChange::exec ? upstream::SessionCommand::exec
                    : (row.flags & kBlocking) && !client.mode.in_multi()
                        ? upstream::SessionCommand::blocking
                        : upstream::SessionCommand::other;
  const auto& session_target = kind == upstream::SessionCommand::blocking
                                   ? track_blocking_reply(client, reply_to)
                                   : reply_to;
  if (!client.dedicated->send_in_session(kind, bytes, session_target, tag, exempt)) {
    client.mode = before;
    return false;
  }
  // Redis may refuse the SUBSCRIBE (an ACL): the barrier tells whether the tunnel holds.
  if (!was_tunneling && client.mode.tunneling()) send_tunnel_barrier(client);
  return true;
}

// Writes to cached keys drop their entries once Redis answers; FLUSHDB/FLUSHALL/SWAPDB drop
// everything.
// Writes queued in MULTI only run at EXEC, so EXEC's reply drops their keys again.
std::shared_ptr<upstream::ReplyTarget> Dispatcher::invalidating_target(
    ClientState& client, const CommandSpec& row, const Request& request,
    const std::shared_ptr<upstream::ReplyTarget>& target) {
  if (row.change == StateChange::exec && client.queued_flush_all) {
    // Queued, FLUSHDB/SWAPDB only ran now: what was cached since it was queued goes too.
    client.queued_write_keys.clear();
    client.queued_flush_all = false;
    read_through_->flush_all();
    return std::make_shared<FlushOnReply>(target, *read_through_);
  }
  if (row.change == StateChange::exec && !client.queued_write_keys.empty()) {
    std::vector<std::string_view> keys(client.queued_write_keys.begin(),
                                       client.queued_write_keys.end());
    keys_.resize(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) keys_[i] = i;
    auto wrapped = read_through_->wrap_write(keys, keys_, target);
    client.queued_write_keys.clear();
    return wrapped;
  }
  if (row.change == StateChange::discard) {
    client.queued_write_keys.clear();
    client.queued_flush_all = false;
  }
  if (!(row.flags & kWrite)) return target;
  if (row.flags & kFlushesAll) {
    if (client.mode.in_multi()) client.queued_flush_all = true;
    read_through_->flush_all();
    return std::make_shared<FlushOnReply>(target, *read_through_);
  }
  key_indices(row, request.argv, keys_);
  if (keys_.empty()) return target;
  if (client.mode.in_multi()) {
    for (auto index : keys_) client.queued_write_keys.emplace_back(request.argv[index]);
  }
  return read_through_->wrap_write(request.argv, keys_, target);
}

void Dispatcher::end_session(ClientState& client) {
  if (client.monitoring) monitor_feed().remove(client.id);
  client.monitoring = false;
  // A clean link of blocking commands serves the next session: the Tcl suite's pattern (and a
  // worker pool's) is a new client per blocking command, whose command must not wait for a
  // connect and a handshake while commands sent after it overtake it.
  if (client.dedicated && client.dedicated->in_flight() == 0) set_dedicated_aside(client);
  // Into the pool of the upstream user it is logged in as, which the client's may no longer be,
  // and only of the upstream it was opened on (a reload may have replaced that one).
  if (KeptLink kept = std::exchange(client.kept, {});
      kept.link && kept.upstream_user == client.upstream_user &&
      client.dedicated_generation == upstream_for(client).generation()) {
    client_registry().clear_upstream_client(client.id);
    upstream_for(client).recycle_session_link(std::move(kept.link), kept.database, kept.protocol);
  } else if (kept.link) {
    client.kept = std::move(kept);  // closed below
  }
  proxy::release_dedicated(client);
}

}  // namespace corral::proxy
