// The awaitable call: a reply target that keeps the outcome and wakes the awaiting coroutine
// through an AsyncEvent, so the reply is resumed from the event loop, not from inside the
// connection's read loop.
#include "upstream/call.hpp"

#include <functional>
#include <memory>

#include <boost/asio/this_coro.hpp>

#include "resp/encoder.hpp"
#include "upstream/async_event.hpp"
#include "upstream/connection.hpp"
#include "upstream/errors.hpp"
#include "upstream/script.hpp"

namespace corral::upstream {

namespace asio = boost::asio;

CallResult CallResult::failure(std::string_view text) {
  CallResult result;
  if (text == kErrUnavailable) {
    result.kind = CallError::unavailable;
  } else if (text.starts_with(kErrTimedOut)) {
    result.kind = CallError::timed_out;
  } else if (text == kErrClosed) {
    result.kind = CallError::closed;
  } else {
    result.kind = CallError::connection_lost;
  }
  result.error = std::string(text);
  return result;
}

namespace {

// Owned by the connection while the command is in flight and by the awaiting coroutine.
class PendingCall final : public ReplyTarget {
 public:
  explicit PendingCall(const asio::any_io_executor& executor) : done_(executor) {}

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

// `send` queues one tracked command for the target it is given; false: nothing was queued.
asio::awaitable<CallResult> send_and_wait(std::function<bool(std::shared_ptr<ReplyTarget>)> send) {
  auto pending = std::make_shared<PendingCall>(co_await asio::this_coro::executor);
  if (!send(pending)) co_return CallResult::failure(kErrUnavailable);
  co_return co_await pending->result();
}

}  // namespace

asio::awaitable<CallResult> call(Connection& connection, std::string_view resp_command) {
  co_return co_await send_and_wait([&](std::shared_ptr<ReplyTarget> target) {
    return connection.send(resp_command, std::move(target), 0);
  });
}

asio::awaitable<CallResult> call(Connection& connection, std::span<const std::string_view> argv) {
  std::string command;
  resp::append_command(command, argv);
  co_return co_await call(connection, std::string_view(command));
}

asio::awaitable<CallResult> call(Connection& connection, const Script& script,
                                 std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args) {
  const std::string command = script.prepare(connection, keys, args);
  auto result = co_await call(connection, std::string_view(command));
  // Redis forgot the script (restart, failover, SCRIPT FLUSH): once more with its source.
  if (result.ok() && Script::is_noscript(result.reply) && Script::is_evalsha(command)) {
    const std::string eval = script.as_eval(command);
    result = co_await call(connection, std::string_view(eval));
  }
  co_return result;
}

}  // namespace corral::upstream
