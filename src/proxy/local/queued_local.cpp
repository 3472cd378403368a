// EXEC's reply with the answers of the local commands queued in its transaction, which run when
// that reply arrives: the transaction has run by then.
#include "proxy/local/queued_local.hpp"

#include <optional>
#include <string>
#include <utility>

#include "resp/array_elements.hpp"
#include "resp/encoder.hpp"

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
  // The other elements are copied byte for byte (a decoded reply would lose RESP2's *-1 / $-1).
  std::string_view run_queued(std::string_view reply, std::string& out) {
    const auto runner = runner_.lock();
    if (runner) runner->exec_answered();
    // A nil (WATCH failed) or an error (EXECABORT): nothing of the transaction ran.
    const auto elements = runner ? resp::array_elements(reply) : std::nullopt;
    if (!elements) return reply;
    std::vector<std::optional<std::string>> answers(elements->size());
    for (const auto& queued : queued_) {
      if (queued.position >= elements->size()) continue;
      const std::vector<std::string_view> argv(queued.argv.begin(), queued.argv.end());
      const std::string_view element = (*elements)[queued.position];
      const bool failed = element.front() == '-' || element.front() == '!';
      switch (queued.kind) {
        case QueuedLocalCommands::Kind::placeholder:
          runner->run_queued(argv, answers[queued.position].emplace());
          break;
        case QueuedLocalCommands::Kind::forwarded:
          runner->ran_in_exec(argv, !failed);
          break;
        case QueuedLocalCommands::Kind::merged:
          // Redis's error (NOPERM for an upstream ACL user ...) is the answer as it is.
          if (!failed) runner->merge_queued(argv, element, answers[queued.position].emplace());
          break;
      }
    }
    resp::append_array_header(out, elements->size());
    for (std::size_t i = 0; i < elements->size(); ++i) {
      out.append(answers[i] ? std::string_view(*answers[i]) : (*elements)[i]);
    }
    return out;
  }

  std::shared_ptr<upstream::ReplyTarget> target_;
  std::vector<QueuedLocalCommands::Queued> queued_;
  std::weak_ptr<QueuedLocalRunner> runner_;
};
}  // namespace

void QueuedLocalCommands::add(std::size_t position, std::span<const std::string_view> argv,
                              Kind kind) {
  queued_.push_back({position, std::vector<std::string>(argv.begin(), argv.end()), kind});
}

std::shared_ptr<upstream::ReplyTarget> QueuedLocalCommands::run_at_exec(
    std::shared_ptr<upstream::ReplyTarget> target, std::weak_ptr<QueuedLocalRunner> runner) const {
  return std::make_shared<RunAtExec>(std::move(target), queued_, std::move(runner));
}

}  // namespace corral::proxy
