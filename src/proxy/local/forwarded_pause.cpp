// CLIENT PAUSE / UNPAUSE: the local hold (client_commands.cpp), the command sent upstream, and
// the process-wide record (upstream/server_pause.hpp) that keeps Corral's links and readiness
// from taking a paused server for a stalled one.
#include "proxy/local/forwarded_pause.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "proxy/ascii.hpp"
#include "proxy/commands/command_shape.hpp"
#include "proxy/local/client_commands.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/server_pause.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {

bool is_error(std::string_view reply) { return !reply.empty() && reply.front() == '-'; }

// Undoing a pause also ends an earlier one still in force: the operator saw this one fail and
// pauses again or not, knowing that nothing is held.
void undo_pause() {
  unpause_clients();
  upstream::server_pause().unpaused();
}

// The upstream's answer to a forwarded CLIENT PAUSE (`unpause` false) or UNPAUSE.
class PauseAnswer final : public upstream::ReplyTarget {
 public:
  PauseAnswer(std::shared_ptr<upstream::ReplyTarget> client, bool unpause)
      : client_(std::move(client)), unpause_(unpause) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (unpause_) {
      unpause_clients();
      if (!is_error(reply)) upstream::server_pause().unpaused();
    } else if (is_error(reply)) {
      undo_pause();
    }
    client_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    // The upstream's fate of the command is unknown; Corral holds nobody past an unpause.
    unpause_ ? unpause_clients() : undo_pause();
    client_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
  bool unpause_;
};

Action forward(LocalCall& call, bool unpause) {
  call.deferred = true;
  auto answer = std::make_shared<PauseAnswer>(*call.target, unpause);
  const CommandSpec* row = find_subcommand(*find_command("client"), call.argv[1]);
  const TableShape shape(*row);
  std::string bytes;
  resp::append_command(bytes, call.argv);
  const upstream::Routed command{shape,          call.argv,           bytes, call.client.database,
                                 call.client.id, call.client.protocol};
  if (!call.upstream->send(command, call.tag, answer)) {
    answer->on_failure(call.tag, upstream::kErrUnavailable);
  }
  return Action::done;
}

}  // namespace

Action client_pause(LocalCall& call) {
  const auto pause = parse_pause(call.argv, call.reply);
  if (!pause) return Action::done;
  // Held here first: no write of Corral's clients reaches a shared link once the pause is asked.
  pause_clients(*pause, call.upstream);
  if (call.upstream == nullptr || call.target == nullptr) {
    resp::append_simple(call.reply, "OK");
    return Action::done;
  }
  upstream::server_pause().forwarded(std::chrono::steady_clock::now() + pause->timeout);
  return forward(call, false);
}

Action client_unpause(LocalCall& call) {
  if (call.upstream == nullptr || call.target == nullptr) {
    unpause_clients();
    resp::append_simple(call.reply, "OK");
    return Action::done;
  }
  return forward(call, true);
}

void pause_ran_in_exec(std::span<const std::string_view> argv, bool taken,
                       upstream::Upstream* upstream) {
  if (!taken) return;
  if (iequals(argv[1], "unpause")) {
    unpause_clients();
    upstream::server_pause().unpaused();
    return;
  }
  std::string error;
  if (const auto pause = parse_pause(argv, error)) {
    pause_clients(*pause, upstream);
    upstream::server_pause().forwarded(std::chrono::steady_clock::now() + pause->timeout);
  }
}

}  // namespace corral::proxy
