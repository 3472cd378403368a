// How a transaction ends when Redis cannot end it as asked: EXEC after a command Corral refused
// inside MULTI (EXECABORT, after a DISCARD upstream), and any command of a transaction whose
// connection died (refused until the client ends it).
#include "proxy/links/transaction_endings.hpp"

#include <string>
#include <utility>

#include "resp/encoder.hpp"
#include "upstream/errors.hpp"
#include "upstream/link.hpp"

namespace corral::proxy {

using session::Action;

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
Action abort_transaction(ClientState& client, std::uint64_t tag,
                         const std::shared_ptr<upstream::ReplyTarget>& target) {
  client.mode.apply(StateChange::discard, {});
  client.queued_database = -1;
  client.acl_change_queued = false;
  client.queued_write_keys.clear();
  client.queued_flush_all = false;
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

// The transaction died with its connection: nothing reaches Redis until the client ends it.
Action answer_lost_transaction(ClientState& client, const CommandSpec& row, std::uint64_t tag,
                               const std::shared_ptr<upstream::ReplyTarget>& target) {
  std::string reply;
  if (row.change == StateChange::exec || row.change == StateChange::discard) {
    client.mode.reset();
    client.queued_write_keys.clear();
    client.queued_flush_all = false;
    client.queued_database = -1;
    client.acl_change_queued = false;
    if (row.change == StateChange::exec) {
      resp::append_error(reply, "EXECABORT Transaction discarded because of previous errors.");
    } else {
      resp::append_simple(reply, "OK");
    }
  } else if (row.change == StateChange::multi) {
    resp::append_error(reply, "ERR MULTI calls can not be nested");
  } else {
    resp::append_error(reply, upstream::kErrStateLost);
  }
  target->on_reply(tag, reply);
  return Action::done;
}

}  // namespace corral::proxy
