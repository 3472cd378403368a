// CLIENT REPLY's state machine, as Redis's clientCommand and resetClient run it, and the
// dispatcher's entry point, which withholds what the mode says Redis would not send.
#include "proxy/reply_mode.hpp"

#include "proxy/ascii.hpp"
#include "proxy/dispatcher.hpp"

namespace corral::proxy {

bool is_reply_mode_word(std::string_view word) {
  return iequals(word, "on") || iequals(word, "off") || iequals(word, "skip");
}

ReplyMode after_client_reply(ReplyMode current, std::string_view word) {
  if (iequals(word, "on")) return ReplyMode::on;
  if (iequals(word, "off")) return ReplyMode::off;
  return current == ReplyMode::off ? ReplyMode::off : ReplyMode::skip_next;
}

ReplyDecision decide_reply(ReplyMode mode) {
  switch (mode) {
    case ReplyMode::on:
      return {true, ReplyMode::on};
    case ReplyMode::off:
      return {false, ReplyMode::off};
    case ReplyMode::skip_next:
      return {false, ReplyMode::on};
  }
  return {true, ReplyMode::on};
}

// CLIENT REPLY OFF and SKIP: the command runs as usual and its slot is filled with nothing once it
// has, so that the client's later commands still wait for it. CLIENT REPLY itself sets the mode.
Action Dispatcher::handle(ClientState& client, const Request& request, const Resolved& resolved,
                          std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                          std::size_t awaiting) {
  // CLIENT REPLY ON|OFF|SKIP sets the mode itself (queued in MULTI it is refused, and that error
  // withheld). A malformed one is an ordinary command: OFF withholds its error, SKIP skips it.
  if (client.reply_mode == ReplyMode::on ||
      (resolved.spec != nullptr && resolved.row().change == StateChange::reply_mode &&
       request.argv.size() == 3 && is_reply_mode_word(request.argv[2]) &&
       !client.mode.in_multi())) {
    return handle_command(client, request, resolved, tag, target, awaiting);
  }
  const ReplyMode before = client.reply_mode;
  auto decision = decide_reply(before);
  // RESET leaves OFF before it answers, as in Redis (a skipped RESET stays silent).
  if (resolved.spec != nullptr && resolved.row().change == StateChange::reset &&
      before == ReplyMode::off) {
    decision.replies = true;
  }
  // Redis 7 sends (un)subscribe confirmations whatever the mode: it pushes them (CLIENT_PUSHING).
  if (resolved.spec != nullptr && (resolved.row().flags & kPubSub) &&
      resolved.row().name.ends_with("subscribe") && !client.mode.in_multi()) {
    decision.replies = true;
  }
  client.reply_mode = decision.next;
  if (decision.replies) return handle_command(client, request, resolved, tag, target, awaiting);
  const std::shared_ptr<upstream::ReplyTarget> withheld = std::make_shared<WithheldReply>(target);
  pushes_to_ = &target;
  const Action action = handle_command(client, request, resolved, tag, withheld, awaiting);
  pushes_to_ = nullptr;
  if (action == Action::wait_then_retry || action == Action::drain_then_retry) {
    client.reply_mode = before;  // handled again later, from the same mode
  }
  return action;
}

}  // namespace corral::proxy
