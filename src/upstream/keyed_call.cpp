// The awaitable keyed call: the reply target keeps the outcome and wakes the awaiting coroutine
// through an AsyncEvent; scripts retry once as EVAL when their node answers NOSCRIPT.
#include "upstream/keyed_call.hpp"

#include <boost/asio/this_coro.hpp>

#include "resp/encoder.hpp"
#include "upstream/async_event.hpp"
#include "upstream/errors.hpp"
#include "upstream/keyed_caller.hpp"
#include "upstream/script.hpp"

namespace corral::upstream {

namespace asio = boost::asio;

namespace {

class PendingKeyedCall final : public ReplyTarget {
 public:
  explicit PendingKeyedCall(const asio::any_io_executor& executor) : done_(executor) {}

  void on_reply(std::uint64_t, std::string_view reply) override {
    result_.reply = std::string(reply);
    done_.notify();
  }
  void on_failure(std::uint64_t, std::string_view error) override {
    result_ = CallResult::failure(error);
    done_.notify();
  }

  asio::awaitable<CallResult> result() {
    co_await done_.wait();
    co_return std::move(result_);
  }

 private:
  AsyncEvent done_;
  CallResult result_;
};

asio::awaitable<CallResult> send_and_wait(KeyedCaller& caller, std::string_view key,
                                          std::string command) {
  auto pending = std::make_shared<PendingKeyedCall>(co_await asio::this_coro::executor);
  if (!caller.send(key, std::move(command), pending, 0)) {
    co_return CallResult::failure(kErrUnavailable);
  }
  co_return co_await pending->result();
}

std::string prepare(KeyedCaller& caller, const Script& script,
                    std::span<const std::string_view> keys,
                    std::span<const std::string_view> args) {
  const std::string_view key = keys.empty() ? std::string_view() : keys.front();
  return script.prepare(
      [&caller, key](std::string_view load, std::shared_ptr<ReplyTarget> target) {
        return caller.send(key, std::string(load), std::move(target), 0);
      },
      keys, args);
}

// Passes an EVALSHA's reply on, except NOSCRIPT: then the same call goes again as EVAL, once.
class KeyedNoScriptRetry final : public ReplyTarget {
 public:
  KeyedNoScriptRetry(std::shared_ptr<KeyedCaller> caller, const Script& script, std::string key,
                     std::string evalsha, std::shared_ptr<ReplyTarget> target)
      : caller_(std::move(caller)),
        script_(script),
        key_(std::move(key)),
        evalsha_(std::move(evalsha)),
        target_(std::move(target)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (Script::is_noscript(reply)) {
      if (caller_->send(key_, script_.as_eval(evalsha_), target_, tag)) return;
      target_->on_failure(tag, kErrUnavailable);
      return;
    }
    target_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    target_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<KeyedCaller> caller_;
  const Script& script_;
  std::string key_;
  std::string evalsha_;
  std::shared_ptr<ReplyTarget> target_;
};

}  // namespace

asio::awaitable<CallResult> call(KeyedCaller& caller, std::string_view key,
                                 std::span<const std::string_view> argv) {
  std::string command;
  resp::append_command(command, argv);
  co_return co_await send_and_wait(caller, key, std::move(command));
}

asio::awaitable<CallResult> call(KeyedCaller& caller, const Script& script,
                                 std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args) {
  const std::string key(keys.empty() ? std::string_view() : keys.front());
  const std::string command = prepare(caller, script, keys, args);
  auto result = co_await send_and_wait(caller, key, command);
  // This node forgot the script or never had it (another node learned the digest, a restart,
  // a failover, SCRIPT FLUSH): once more with its source, which caches it there.
  if (result.ok() && Script::is_noscript(result.reply) && Script::is_evalsha(command)) {
    result = co_await send_and_wait(caller, key, script.as_eval(command));
  }
  co_return result;
}

asio::awaitable<CallResult> call_primary(KeyedCaller& caller, std::string_view primary,
                                         std::span<const std::string_view> argv) {
  std::string command;
  resp::append_command(command, argv);
  auto pending = std::make_shared<PendingKeyedCall>(co_await asio::this_coro::executor);
  if (!caller.send_to_primary(primary, std::move(command), pending, 0)) {
    co_return CallResult::failure(kErrUnavailable);
  }
  co_return co_await pending->result();
}

bool run(KeyedCaller& caller, const Script& script, std::span<const std::string_view> keys,
         std::span<const std::string_view> args, std::shared_ptr<ReplyTarget> target,
         std::uint64_t tag) {
  const std::string key(keys.empty() ? std::string_view() : keys.front());
  auto command = prepare(caller, script, keys, args);
  if (!Script::is_evalsha(command)) return caller.send(key, std::move(command), target, tag);
  const std::string evalsha = command;
  auto retry = std::make_shared<KeyedNoScriptRetry>(caller.shared_from_this(), script, key,
                                                    std::move(command), std::move(target));
  return caller.send(key, evalsha, retry, tag);
}

}  // namespace corral::upstream
