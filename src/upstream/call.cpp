// The awaitable call: a reply target that keeps the outcome and wakes the awaiting coroutine
// through an AsyncEvent, so the reply is resumed from the event loop, not from inside the
// connection's read loop.
#include "upstream/call.hpp"

#include <memory>

#include <boost/asio/this_coro.hpp>

#include "resp/encoder.hpp"
#include "upstream/async_event.hpp"
#include "upstream/connection.hpp"
#include "upstream/errors.hpp"
#include "upstream/script.hpp"

namespace corral::upstream {

namespace asio = boost::asio;

CallResult CallResult::failure(ErrorKind kind, std::string_view text) {
  CallResult result;
  switch (kind) {
    case ErrorKind::upstream_unavailable:
      result.kind = CallError::unavailable;
      break;
    case ErrorKind::timeout:
      result.kind = CallError::timed_out;
      break;
    case ErrorKind::closed:
      result.kind = CallError::closed;
      break;
    default:
      result.kind = CallError::connection_lost;
      break;
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
  void on_error(std::uint64_t, ErrorKind kind, std::string_view error) override {
    result_ = CallResult::failure(kind, error);
    done_.notify();
  }
  // A failure without a kind (Corral's own answer on the way, e.g. a cluster command that found
  // no node): the command's fate is not known, as after a lost connection.
  void on_failure(std::uint64_t, std::string_view error) override {
    result_ = CallResult::failure(ErrorKind::connection_lost, error);
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

}  // namespace

asio::awaitable<CallResult> call(const CommandSender& send, std::string_view resp_command) {
  auto pending = std::make_shared<PendingCall>(co_await asio::this_coro::executor);
  if (!send(resp_command, pending, 0))
    co_return CallResult::failure(ErrorKind::upstream_unavailable, kErrUnavailable);
  co_return co_await pending->result();
}

asio::awaitable<CallResult> call(const CommandSender& send, const Script& script,
                                 std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args) {
  const std::string command = script.prepare(send, keys, args);
  auto result = co_await call(send, std::string_view(command));
  // Redis (this node) forgot the script or never had it: restart, failover, SCRIPT FLUSH, or a
  // cluster node other than the one whose SCRIPT LOAD taught the digest. Once more with its source.
  if (result.ok() && Script::is_noscript(result.reply) && Script::is_evalsha(command)) {
    const std::string eval = script.as_eval(command);
    result = co_await call(send, std::string_view(eval));
  }
  co_return result;
}

namespace {
CommandSender sender_of(Connection& connection) {
  return
      [&connection](std::string_view command, std::shared_ptr<ReplyTarget> target,
                    std::uint64_t tag) { return connection.send(command, std::move(target), tag); };
}
}  // namespace

asio::awaitable<CallResult> call(Connection& connection, std::string_view resp_command) {
  const CommandSender send = sender_of(connection);
  co_return co_await call(send, resp_command);
}

asio::awaitable<CallResult> call(Connection& connection, std::span<const std::string_view> argv) {
  std::string command;
  resp::append_command(command, argv);
  co_return co_await call(connection, std::string_view(command));
}

asio::awaitable<CallResult> call(Connection& connection, const Script& script,
                                 std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args) {
  const CommandSender send = sender_of(connection);
  co_return co_await call(send, script, keys, args);
}

}  // namespace corral::upstream
