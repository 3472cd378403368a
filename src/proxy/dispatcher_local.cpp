// The commands Corral answers itself: checked against the client's upstream ACL user, timed for
// LATENCY HISTOGRAM, and those queued inside MULTI run when EXEC's reply comes.
#include <cassert>
#include <chrono>
#include <optional>

#include "proxy/dispatcher.hpp"
#include "proxy/errors.hpp"
#include "proxy/local/local_commands.hpp"
#include "proxy/local/local_latency.hpp"
#include "proxy/local/version_commands.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"

namespace corral::proxy {

LocalCall Dispatcher::local_call(ClientState& client, std::span<const std::string_view> argv,
                                 std::size_t awaiting, std::string& reply) {
  LocalCall call{client, argv, settings_, client_, info_, awaiting, reply, cache_};
  call.upstream = &upstream_for(client);
  call.user_auth = &user_auth_;
  call.keyed = keyed_caller_.get();
  call.slowlog = slowlog_;
  call.hot_keys = hot_keys_;
  return call;
}

Action Dispatcher::answer_locally(ClientState& client, const Request& request,
                                  const CommandSpec& row, std::uint64_t tag,
                                  const std::shared_ptr<upstream::ReplyTarget>& target,
                                  std::size_t awaiting) {
  // CORRAL.ROLLOVER / CORRAL.PURGE talk to Redis: they answer the slot later.
  if (is_version_command(row.name)) {
    if (keyed_caller_ == nullptr) {
      target->on_failure(tag, upstream::kErrUnavailable);
    } else {
      run_version_command({row.name, client, request.argv, *keyed_caller_, cache_}, tag, target);
    }
    return Action::done;
  }
  const LocalHandler local = find_local_handler(row);
  // No handler: Redis answers it (answered_by_redis; the version commands ran above).
  if (local == nullptr) return forward(client, request, row, tag, target, awaiting);
  if (const auto refused = refuse_without_rights(client, row, request.argv, tag, target)) {
    return *refused;
  }
  LocalCall call = local_call(client, request.argv, awaiting, scratch_);
  call.tag = tag;
  call.target = &target;
  const auto started = std::chrono::steady_clock::now();
  const Action action = local(call);
  if (action == Action::drain_then_retry || action == Action::wait_then_retry) return action;
  // Redis's duration: the command's own work, not an upstream round trip a deferred one awaits.
  local_latency().record(command_id(row), std::chrono::steady_clock::now() - started);
  if (!call.deferred) target->on_reply(tag, scratch_);
  return action;
}

bool Dispatcher::answered_by_redis(const CommandSpec& row) {
  return find_local_handler(row) == nullptr && !is_version_command(row.name);
}

std::optional<Action> Dispatcher::refuse_without_rights(
    ClientState& client, const CommandSpec& row, std::span<const std::string_view> argv,
    std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target) {
  // CORRAL.* have client.admin_password instead; AUTH, HELLO, QUIT, RESET need no rights.
  if (!client.user_upstream || (row.flags & kNoAuth) || row.name.starts_with("corral.")) {
    return std::nullopt;
  }
  switch (acl_verdicts_.may_run(client.upstream_user, row, argv)) {
    case AclVerdicts::Verdict::pending:
      return Action::wait_then_retry;
    case AclVerdicts::Verdict::denied:
      append_no_permission(scratch_, row.name);
      // As Redis: a command refused while queueing aborts the transaction.
      client.mode.refused_in_multi();
      target->on_reply(tag, scratch_);
      return Action::done;
    case AclVerdicts::Verdict::unavailable:
      client.mode.refused_in_multi();
      target->on_failure(tag, upstream::kErrUnavailable);
      return Action::done;
    case AclVerdicts::Verdict::allowed:
      break;
  }
  return std::nullopt;
}

bool Dispatcher::merges_at_exec(const ClientState& client, const CommandSpec& row) const {
  return (row.flags & kMergedAtExec) && !upstream_for(client).partitioned();
}

namespace {
// Takes the merged answer a handler gives its target: at once, the upstream's answer being known.
class CapturedAnswer final : public upstream::ReplyTarget {
 public:
  void on_reply(std::uint64_t, std::string_view reply) override { answer = reply; }
  void on_failure(std::uint64_t, std::string_view error) override {
    resp::append_error(answer.emplace(), error);
  }
  std::optional<std::string> answer;
};
}  // namespace

void Dispatcher::merge_queued_local(ClientState& client, std::span<const std::string_view> argv,
                                    std::string_view upstream_answer, std::string& answer) {
  const Resolved resolved = resolve(Request{argv, {}});
  const LocalHandler local =
      resolved.spec != nullptr ? find_local_handler(resolved.row()) : nullptr;
  // A local row without a handler (COMMAND HELP) is Redis's to answer.
  if (local == nullptr) {
    answer.append(upstream_answer);
    return;
  }
  const auto captured = std::make_shared<CapturedAnswer>();
  const std::shared_ptr<upstream::ReplyTarget> target = captured;
  LocalCall call = local_call(client, argv, 0, answer);
  call.target = &target;
  call.upstream_answer = upstream_answer;
  local(call);
  if (!call.deferred) return;  // answered into `answer` (Corral's own table: COMMAND GETKEYS ...)
  // A handler that asked anyway would answer too late for EXEC's reply: Redis's answer stands.
  assert(captured->answer.has_value());
  answer.append(captured->answer ? std::string_view(*captured->answer) : upstream_answer);
}

void Dispatcher::run_queued_local(ClientState& client, std::span<const std::string_view> argv,
                                  std::string& answer) {
  const Resolved resolved = resolve(Request{argv, {}});
  const LocalHandler local =
      resolved.spec != nullptr ? find_local_handler(resolved.row()) : nullptr;
  assert(local != nullptr && (resolved.row().flags & kRunsAtExec));
  if (local == nullptr) return resp::append_error(answer, "ERR unknown command queued");
  // No reply target: what the handler answers, it answers now (kRunsAtExec rows do).
  LocalCall call = local_call(client, argv, 0, answer);
  local(call);
}

}  // namespace corral::proxy
