// The held transaction: MULTI and keyless queued commands are kept as bytes and answered as Redis
// would (+OK, +QUEUED); binding replays them on the new connection, their replies discarded.
#include "proxy/links/partitioned_transaction.hpp"

#include <optional>

#include <string>

#include "proxy/links/client_unblock.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"
#include "upstream/link.hpp"

namespace corral::proxy {

namespace {

void answer_status(const std::shared_ptr<upstream::ReplyTarget>& target, std::uint64_t tag,
                   std::string_view status) {
  std::string reply;
  resp::append_simple(reply, status);
  target->on_reply(tag, reply);
}

void answer_error(const std::shared_ptr<upstream::ReplyTarget>& target, std::uint64_t tag,
                  std::string_view error) {
  std::string reply;
  resp::append_error(reply, error);
  target->on_reply(tag, reply);
}

void refuse_cross_slot(upstream::Upstream& upstream, ClientState& client, std::uint64_t tag,
                       const std::shared_ptr<upstream::ReplyTarget>& target) {
  upstream.note_cross_partition_refusal();
  client.mode.refused_in_multi();
  answer_error(target, tag, upstream.cross_partition_error());
}

// Opens the client's link to `slot`'s server (kAnyPartition: any) and replays what was held;
// the refusal when no link could be opened.
std::optional<upstream::ErrorKind> bind(upstream::Upstream& upstream, ClientState& client, int slot,
                                        const upstream::Routed& command) {
  auto opened = upstream.open_session_link(slot, command);
  if (!opened.link) return opened.refusal;
  client.dedicated = std::move(opened.link);
  learn_upstream_client_id(client);
  client.cluster_slot = slot;
  // Replies to the replayed MULTI and queued commands: the client had them already.
  auto discard = std::make_shared<upstream::DiscardTarget>();
  for (const auto& bytes : client.held_commands) {
    if (!client.dedicated->send(bytes, discard, 0))
      return upstream::ErrorKind::upstream_unavailable;
  }
  client.held_commands.clear();
  return std::nullopt;
}

TransactionStep held_transaction_step(upstream::Upstream& upstream, ClientState& client,
                                      const CommandSpec& row, const upstream::Routed& command,
                                      int slot, std::uint64_t tag,
                                      const std::shared_ptr<upstream::ReplyTarget>& target) {
  if (slot == upstream::kSpansPartitions) {
    refuse_cross_slot(upstream, client, tag, target);
    return TransactionStep::answered;
  }
  if (row.change == StateChange::multi) {
    answer_error(target, tag, "ERR MULTI calls can not be nested");  // Redis's, nothing held
    return TransactionStep::answered;
  }
  if (row.change == StateChange::discard) {
    client.held_commands.clear();
    client.mode.apply(StateChange::discard, {});
    client.acl_change_queued = false;
    answer_status(target, tag, "OK");
    return TransactionStep::answered;
  }
  if (row.change == StateChange::exec &&
      client.mode.state() == ConnectionMode::State::multi_aborted) {
    client.held_commands.clear();
    client.mode.apply(StateChange::discard, {});
    client.acl_change_queued = false;
    answer_error(target, tag, "EXECABORT Transaction discarded because of previous errors.");
    return TransactionStep::answered;
  }
  if (slot == upstream::kAnyPartition && row.change != StateChange::exec) {
    client.mode.apply(row.change, command.argv);  // queued, as if sent
    client.held_commands.emplace_back(command.bytes);
    answer_status(target, tag, "QUEUED");
    return TransactionStep::answered;
  }
  if (const auto refusal = bind(upstream, client, slot, command)) {
    if (*refusal == upstream::ErrorKind::failing_over) return TransactionStep::link_failing;
    fail_transaction_link(client, tag, target, upstream::kErrUnavailable);
    return TransactionStep::answered;
  }
  return TransactionStep::forward;
}

}  // namespace

void fail_transaction_link(ClientState& client, std::uint64_t tag,
                           const std::shared_ptr<upstream::ReplyTarget>& target,
                           std::string_view error) {
  client.held_commands.clear();
  client.mode.refused_in_multi();
  target->on_failure(tag, error);
}

TransactionStep partitioned_transaction_step(upstream::Upstream& upstream, ClientState& client,
                                             const CommandSpec& row,
                                             const upstream::Routed& command, std::uint64_t tag,
                                             const std::shared_ptr<upstream::ReplyTarget>& target) {
  if (client.dedicated) {
    // Bound by WATCH or the transaction's first key: other partitions cannot join it.
    const bool bound = client.mode.holds_redis_state() && client.cluster_slot >= 0;
    if (bound || client.mode.holds_connection()) {
      const int slot = upstream.partition_of(command);
      if (bound &&
          (slot == upstream::kSpansPartitions || (slot >= 0 && slot != client.cluster_slot))) {
        refuse_cross_slot(upstream, client, tag, target);
        return TransactionStep::answered;
      }
      // A link held by CLIENT TRACKING or RESP3 pub/sub is on one upstream of the routes.
      const bool subscribes =
          row.change == StateChange::subscribe && slot == upstream::kAnyPartition;
      if (!upstream.link_serves(client.cluster_slot, slot, subscribes)) {
        refuse_cross_slot(upstream, client, tag, target);
        return TransactionStep::answered;
      }
    }
    return TransactionStep::forward;
  }
  if (row.change == StateChange::multi && !client.mode.in_multi()) {
    client.mode.apply(StateChange::multi, command.argv);
    client.held_commands.assign(1, std::string(command.bytes));
    answer_status(target, tag, "OK");
    return TransactionStep::answered;
  }
  if (!client.mode.in_multi()) return TransactionStep::forward;
  return held_transaction_step(upstream, client, row, command, upstream.partition_of(command), tag,
                               target);
}

}  // namespace corral::proxy
