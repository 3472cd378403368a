// EXEC's reply with the answers of the local commands queued in its transaction, which run when
// that reply arrives: the transaction has run by then.
#include "proxy/local/queued_local.hpp"

#include <utility>

#include "resp/reply.hpp"

namespace corral::proxy {

namespace {
class RunAtExec final : public upstream::ReplyTarget {
 public:
  RunAtExec(std::shared_ptr<upstream::ReplyTarget> target,
            std::vector<QueuedLocalCommands::Queued> queued,
            std::weak_ptr<QueuedLocalRunner> runner)
      : target_(std::move(target)), queued_(std::move(queued)), runner_(std::move(runner)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    std::string answered;
    target_->on_reply(tag, run_queued(reply, answered));
  }
  // Under CLIENT REPLY OFF the queued commands run all the same: only their answers are withheld.
  void on_withheld_reply(std::uint64_t tag, std::string_view reply) override {
    std::string answered;
    target_->on_withheld_reply(tag, run_queued(reply, answered));
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    if (const auto runner = runner_.lock()) runner->exec_answered();
    target_->on_failure(tag, error);
  }
  void on_error(std::uint64_t tag, upstream::ErrorKind kind, std::string_view error) override {
    if (const auto runner = runner_.lock()) runner->exec_answered();
    target_->on_error(tag, kind, error);
  }

 private:
  // When EXEC's reply is the transaction's results, runs the queued commands and returns that
  // reply with the placeholders' answers in their places (in `out`); else the reply as it is.
  std::string_view run_queued(std::string_view reply, std::string& out) {
    auto decoded = resp::decode_reply(reply);
    const auto runner = runner_.lock();
    if (runner) runner->exec_answered();
    // A nil (WATCH failed) or an error (EXECABORT): nothing of the transaction ran.
    if (!decoded || decoded->type != resp::Reply::Type::array || !runner) return reply;
    for (const auto& queued : queued_) {
      if (queued.position >= decoded->elements.size()) continue;
      const std::vector<std::string_view> argv(queued.argv.begin(), queued.argv.end());
      auto& element = decoded->elements[queued.position];
      if (queued.forwarded) {
        runner->ran_in_exec(argv, element.type != resp::Reply::Type::error &&
                                      element.type != resp::Reply::Type::blob_error);
        continue;
      }
      std::string answer;
      runner->run_queued(argv, answer);
      if (auto answered = resp::decode_reply(answer)) element = std::move(*answered);
    }
    resp::append_reply(out, *decoded);
    return out;
  }

  std::shared_ptr<upstream::ReplyTarget> target_;
  std::vector<QueuedLocalCommands::Queued> queued_;
  std::weak_ptr<QueuedLocalRunner> runner_;
};
}  // namespace

void QueuedLocalCommands::add(std::size_t position, std::span<const std::string_view> argv,
                              bool forwarded) {
  queued_.push_back({position, std::vector<std::string>(argv.begin(), argv.end()), forwarded});
}

std::shared_ptr<upstream::ReplyTarget> QueuedLocalCommands::run_at_exec(
    std::shared_ptr<upstream::ReplyTarget> target, std::weak_ptr<QueuedLocalRunner> runner) const {
  return std::make_shared<RunAtExec>(std::move(target), queued_, std::move(runner));
}

}  // namespace corral::proxy
