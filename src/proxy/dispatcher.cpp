// Request routing: checks (known, arity, auth, allowed), local answers, and the choice between the
// thread's shared upstream connection and a dedicated one for stateful commands.
#include "proxy/dispatcher.hpp"

#include <algorithm>
#include <cctype>

#include "proxy/ascii.hpp"
#include "proxy/client_session.hpp"
#include "proxy/errors.hpp"
#include "proxy/local_commands.hpp"
#include "proxy/subscriptions.hpp"
#include "proxy/version_commands.hpp"
#include "resp/encoder.hpp"
#include "stampede/read_through.hpp"
#include "upstream/connection.hpp"
#include "upstream/errors.hpp"
#include "upstream/pool.hpp"

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

std::string normalized_command_name(std::string_view configured) {
  std::string name;
  for (char c : configured) {
    name.push_back(c == ' ' ? '|' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return name;
}
}  // namespace

Dispatcher::Dispatcher(const config::Settings& settings, upstream::Pool& pool, ProcessInfo& info,
                       stampede::ReadThrough* read_through, stampede::CacheRuntime* cache)
    : settings_(settings), pool_(pool), info_(info), read_through_(read_through), cache_(cache) {
  for (const auto& allowed : settings_.client.allow_commands) {
    allowed_.push_back(normalized_command_name(allowed));
  }
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

std::uint32_t Dispatcher::protocol_error_metric() const {
  return static_cast<std::uint32_t>(metric_id_count() - 1);
}

Resolved Dispatcher::resolve(const Request& request) const {
  Resolved resolved;
  resolved.metric_id = all_commands().size();
  resolved.spec = find_command(request.argv[0]);
  if (resolved.spec == nullptr) return resolved;
  if (request.argv.size() >= 2) resolved.sub = find_subcommand(*resolved.spec, request.argv[1]);
  resolved.metric_id = command_id(resolved.sub ? *resolved.sub : *resolved.spec);
  return resolved;
}

bool Dispatcher::command_allowed(const Resolved& resolved) const {
  return std::any_of(allowed_.begin(), allowed_.end(), [&](const std::string& allowed) {
    return allowed == resolved.spec->name || (resolved.sub && allowed == resolved.sub->name);
  });
}

Action Dispatcher::handle(ClientState& client, const Request& request, const Resolved& resolved,
                          std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                          std::size_t awaiting) {
  scratch_.clear();
  const auto argv = request.argv;
  if (resolved.spec == nullptr) {
    append_unknown_command(scratch_, argv);
  } else if (!arity_ok(*resolved.spec, argv.size()) ||
             (resolved.sub && !arity_ok(*resolved.sub, argv.size()))) {
    append_wrong_arity(scratch_, (resolved.sub ? resolved.sub : resolved.spec)->name);
  } else if (!client.authenticated &&
             !((resolved.sub ? resolved.sub : resolved.spec)->flags & kNoAuth)) {
    append_noauth(scratch_);
  } else if (((resolved.spec->flags | (resolved.sub ? resolved.sub->flags : 0)) & kDangerous) &&
             !command_allowed(resolved)) {
    append_not_allowed(scratch_, (resolved.sub ? resolved.sub : resolved.spec)->name);
  } else {
    const auto& row = resolved.sub ? *resolved.sub : *resolved.spec;
    // Inside MULTI, Redis queues local commands with the rest (their replies belong in EXEC's);
    // SELECT on a dedicated connection must reach it too.
    const bool redis_must_see = (client.in_multi && row.name != "quit" && row.name != "reset") ||
                                (row.name == "select" && client.dedicated);
    // CORRAL.ROLLOVER / CORRAL.PURGE talk to Redis: they answer the slot later.
    if ((row.flags & kLocal) && !redis_must_see && is_version_command(row.name)) {
      run_version_command({row.name, client, argv, pool_, cache_}, tag, target);
      return Action::done;
    }
    const LocalHandler local =
        (row.flags & kLocal) && !redis_must_see ? find_local_handler(row) : nullptr;
    if (local == nullptr) return forward(client, request, resolved, tag, target, awaiting);
    LocalCall call{client, argv, settings_, info_, awaiting, scratch_, cache_};
    const Action action = local(call);
    if (action == Action::drain_then_retry) return action;
    target->on_reply(tag, scratch_);
    return action;
  }
  // Redis aborts a transaction whose queued command it rejected; Corral rejected this one for it.
  if (client.in_multi) client.multi_errored = true;
  target->on_reply(tag, scratch_);
  return Action::done;
}

Dispatcher::Route Dispatcher::route_for(const Resolved& resolved, const Request& request) const {
  const auto& row = resolved.sub ? *resolved.sub : *resolved.spec;
  const auto name = row.name;
  if (name == "subscribe" || name == "psubscribe" || name == "ssubscribe" || name == "monitor") {
    return Route::enter_tunnel;
  }
  if (name == "client|reply") {
    return iequals(request.argv[2], "on") ? Route::shared : Route::reply_suppressed;
  }
  if (name == "multi" || name == "watch" || name == "client|tracking" ||
      name == "client|no-evict" || name == "client|caching") {
    return Route::dedicated;
  }
  if (row.flags & kBlocking) {
    // XREAD and XREADGROUP block only when asked to.
    if (name == "xread" || name == "xreadgroup") {
      return has_argument(request.argv, "block") ? Route::dedicated : Route::shared;
    }
    return Route::dedicated;
  }
  return Route::shared;
}

std::string_view Dispatcher::wire_bytes(const Request& request) {
  if (!request.raw.empty()) return request.raw;
  scratch_.clear();
  resp::append_command(scratch_, request.argv);
  return scratch_;
}

// Tracks the connection state a command leaves behind on the client's dedicated connection.
static void note_mode_change(ClientState& client, const CommandSpec& row,
                             std::span<const std::string_view> argv) {
  const auto name = row.name;
  if (name == "multi") {
    client.in_multi = true;
  } else if (name == "exec" || name == "discard") {
    client.in_multi = false;
    client.multi_errored = false;
    client.watching = false;
  } else if (name == "watch") {
    client.watching = true;
  } else if (name == "unwatch") {
    client.watching = false;
  } else if (name == "client|tracking") {
    client.tracking = iequals(argv[2], "on");
  } else if (name == "client|no-evict" || name == "monitor" || name == "client|reply") {
    client.sticky = true;
  } else if (name == "select") {
    // Redis validates it; the session follows so a later shared connection uses the same db.
    client.database = std::atoi(std::string(argv[1]).c_str());
  }
}

Action Dispatcher::forward(ClientState& client, const Request& request, const Resolved& resolved,
                           std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                           std::size_t awaiting) {
  if (client.dedicated && client.dedicated->state() == upstream::Connection::State::closed) {
    const bool state_lost = client.in_multi || client.watching || client.tracking;
    proxy::release_dedicated(client);
    if (state_lost) {
      target->on_failure(tag, upstream::kErrStateLost);
      return Action::done;
    }
  }
  const Route route = route_for(resolved, request);
  const bool holds_state =
      client.in_multi || client.watching || client.tracking || client.sticky || client.tunnel;
  if (client.dedicated && !holds_state && route == Route::shared && awaiting == 0 &&
      client.dedicated->in_flight() == 0) {
    proxy::release_dedicated(client);
  }
  if (!client.dedicated && route != Route::shared) {
    // Commands of one client must run in order, so it switches connections only when idle.
    if (awaiting > 0) return Action::drain_then_retry;
    client.dedicated = pool_.dedicated(client.database);
  }

  const auto& row = resolved.sub ? *resolved.sub : *resolved.spec;
  if (row.name == "exec" && client.multi_errored && client.dedicated) {
    return abort_transaction(client, tag, target);
  }
  // The cache holds the configured database only; other databases pass through.
  const bool cacheable = read_through_ && client.database == settings_.upstream.database;
  if (cacheable && !client.dedicated && (row.flags & kReadOnly) &&
      read_through_->handle_read(row.name, request.argv, tag, target)) {
    return Action::done;
  }
  if (cacheable && (row.flags & kWrite) && row.name != "del" && row.name != "unlink") {
    key_indices(row, request.argv, keys_);
    if (auto refusal = read_through_->refused_write(request.argv, keys_)) {
      if (client.in_multi) client.multi_errored = true;
      target->on_failure(tag, *refusal);
      return Action::done;
    }
  }
  const auto& reply_to = cacheable ? invalidating_target(client, row, request, target) : target;
  const auto bytes = wire_bytes(request);
  bool sent = false;
  if (client.dedicated) {
    note_mode_change(client, row, request.argv);
    if (route == Route::enter_tunnel || route == Route::reply_suppressed) {
      client.dedicated->set_unsolicited_target(target);
      client.tunnel = true;
      client.subscribed = row.name != "monitor" && row.name != "client|reply";
    }
    if (route == Route::reply_suppressed) {
      sent = client.dedicated->send_untracked(bytes);
      if (sent) target->on_reply(tag, {});
    } else {
      const bool exempt = (row.flags & kBlocking) || route == Route::enter_tunnel;
      sent = client.dedicated->send(bytes, reply_to, tag, exempt);
    }
  } else {
    sent = pool_.shared(client.database, client.id).send(bytes, reply_to, tag);
  }
  if (!sent) target->on_failure(tag, upstream::kErrUnavailable);
  return Action::done;
}

// Writes to cached keys drop their entries once Redis answers; FLUSHDB/FLUSHALL drop everything.
// Writes queued in MULTI only run at EXEC, so EXEC's reply drops their keys again.
std::shared_ptr<upstream::ReplyTarget> Dispatcher::invalidating_target(
    ClientState& client, const CommandSpec& row, const Request& request,
    const std::shared_ptr<upstream::ReplyTarget>& target) {
  if (row.name == "exec" && !client.queued_write_keys.empty()) {
    std::vector<std::string_view> keys(client.queued_write_keys.begin(),
                                       client.queued_write_keys.end());
    keys_.resize(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) keys_[i] = i;
    auto wrapped = read_through_->wrap_write(keys, keys_, target);
    client.queued_write_keys.clear();
    return wrapped;
  }
  if (row.name == "discard") client.queued_write_keys.clear();
  if (!(row.flags & kWrite)) return target;
  if (row.name == "flushdb" || row.name == "flushall") {
    read_through_->flush_all();
    return std::make_shared<FlushOnReply>(target, *read_through_);
  }
  key_indices(row, request.argv, keys_);
  if (keys_.empty()) return target;
  if (client.in_multi) {
    for (auto index : keys_) client.queued_write_keys.emplace_back(request.argv[index]);
  }
  return read_through_->wrap_write(request.argv, keys_, target);
}

namespace {
// Answers one command with a fixed reply once Redis has answered it (or fails it if Redis can't).
class FixedReply : public upstream::ReplyTarget {
 public:
  FixedReply(std::shared_ptr<upstream::ReplyTarget> client, std::string reply)
      : client_(std::move(client)), reply_(std::move(reply)) {}
  void on_reply(std::uint64_t tag, std::string_view) override { client_->on_reply(tag, reply_); }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
  std::string reply_;
};
}  // namespace

// EXEC after a command Corral refused inside MULTI: discard upstream, answer as Redis would.
Action Dispatcher::abort_transaction(ClientState& client, std::uint64_t tag,
                                     const std::shared_ptr<upstream::ReplyTarget>& target) {
  client.in_multi = client.multi_errored = client.watching = false;
  client.queued_write_keys.clear();
  std::string reply;
  resp::append_error(reply, "EXECABORT Transaction discarded because of previous errors.");
  std::string discard;
  const std::string_view argv[] = {"DISCARD"};
  resp::append_command(discard, argv);
  auto answer = std::make_shared<FixedReply>(target, std::move(reply));
  if (!client.dedicated->send(discard, answer, tag))
    target->on_failure(tag, upstream::kErrUnavailable);
  return Action::done;
}

Action Dispatcher::handle_tunnel(ClientState& client, const Request& request, std::string& reply) {
  if (iequals(request.argv[0], "quit")) {
    resp::append_simple(reply, "OK");
    return Action::close_after_reply;
  }
  if (!client.dedicated || !client.dedicated->send_untracked(wire_bytes(request))) {
    resp::append_error(reply, upstream::kErrConnectionLost);
    return Action::close_after_reply;
  }
  return Action::done;
}

void Dispatcher::on_unsolicited(ClientState& client, std::string_view reply) {
  // Leaving subscribed mode: later requests get slots again. The dedicated connection keeps this
  // client as its unsolicited target, so replies to requests already sent untracked still arrive.
  if (client.subscribed && ends_subscriptions(reply)) {
    client.subscribed = false;
    client.tunnel = false;
  }
}

void Dispatcher::end_session(ClientState& client) { proxy::release_dedicated(client); }

}  // namespace corral::proxy
