// EXEC's reply with the answers of the CLIENT PAUSE / UNPAUSE queued in its transaction, which
// run when that reply arrives: the transaction has run by then.
#include "proxy/local/queued_pause.hpp"

#include <utility>

#include "proxy/ascii.hpp"
#include "proxy/local/client_commands.hpp"
#include "resp/reply.hpp"

namespace corral::proxy {

namespace {
class RunAtExec final : public upstream::ReplyTarget {
 public:
  RunAtExec(std::shared_ptr<upstream::ReplyTarget> target, std::vector<QueuedPauses::Queued> queued)
      : target_(std::move(target)), queued_(std::move(queued)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    auto decoded = resp::decode_reply(reply);
    // A nil (WATCH failed) or an error (EXECABORT): nothing of the transaction ran.
    if (!decoded || decoded->type != resp::Reply::Type::array) {
      return target_->on_reply(tag, reply);
    }
    for (const auto& queued : queued_) {
      if (queued.position >= decoded->elements.size()) continue;
      std::string answer;
      run(queued.argv, answer);
      if (auto element = resp::decode_reply(answer)) {
        decoded->elements[queued.position] = std::move(*element);
      }
    }
    std::string out;
    resp::append_reply(out, *decoded);
    target_->on_reply(tag, out);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    target_->on_failure(tag, error);
  }
  void on_error(std::uint64_t tag, upstream::ErrorKind kind, std::string_view error) override {
    target_->on_error(tag, kind, error);
  }

 private:
  static void run(const std::vector<std::string>& argv, std::string& answer) {
    std::vector<std::string_view> views(argv.begin(), argv.end());
    if (iequals(views[1], "unpause")) {
      unpause_clients(answer);
    } else {
      // No upstream to ask which functions declare no-writes: FCALL is held by its own flags.
      pause_clients(views, nullptr, answer);
    }
  }

  std::shared_ptr<upstream::ReplyTarget> target_;
  std::vector<QueuedPauses::Queued> queued_;
};
}  // namespace

void QueuedPauses::add(std::size_t position, std::span<const std::string_view> argv) {
  queued_.push_back({position, std::vector<std::string>(argv.begin(), argv.end())});
}

std::shared_ptr<upstream::ReplyTarget> QueuedPauses::run_at_exec(
    std::shared_ptr<upstream::ReplyTarget> target) const {
  return std::make_shared<RunAtExec>(std::move(target), queued_);
}

}  // namespace corral::proxy
