// The keyed calls: call.hpp's sender-based calls, with a sender that routes by the key (or to one
// primary), so the awaiting and the NOSCRIPT retry are the ones every conversation uses.
#include "upstream/keyed_call.hpp"

#include "resp/encoder.hpp"
#include "upstream/keyed_caller.hpp"
#include "upstream/script.hpp"

namespace corral::upstream {

namespace asio = boost::asio;

namespace {

// Holds the caller: a script's EVAL retry may outlive the coroutine or call that sent it.
CommandSender by_key(KeyedCaller& caller, std::string_view key) {
  return [caller = caller.shared_from_this(), key = std::string(key)](
             std::string_view command, std::shared_ptr<ReplyTarget> target, std::uint64_t tag) {
    return caller->send(key, std::string(command), std::move(target), tag);
  };
}

std::string_view first_key(std::span<const std::string_view> keys) {
  return keys.empty() ? std::string_view() : keys.front();
}

}  // namespace

asio::awaitable<CallResult> call(KeyedCaller& caller, std::string_view key,
                                 std::span<const std::string_view> argv) {
  std::string command;
  resp::append_command(command, argv);
  const CommandSender send = by_key(caller, key);
  co_return co_await call(send, std::string_view(command));
}

asio::awaitable<CallResult> call(KeyedCaller& caller, const Script& script,
                                 std::span<const std::string_view> keys,
                                 std::span<const std::string_view> args) {
  const CommandSender send = by_key(caller, first_key(keys));
  co_return co_await call(send, script, keys, args);
}

asio::awaitable<CallResult> call_primary(KeyedCaller& caller, std::string_view primary,
                                         std::span<const std::string_view> argv) {
  std::string command;
  resp::append_command(command, argv);
  const CommandSender send = [caller = caller.shared_from_this(), name = std::string(primary)](
                                 std::string_view bytes, std::shared_ptr<ReplyTarget> target,
                                 std::uint64_t tag) {
    return caller->send_to_primary(name, std::string(bytes), std::move(target), tag);
  };
  co_return co_await call(send, std::string_view(command));
}

bool run(KeyedCaller& caller, const Script& script, std::span<const std::string_view> keys,
         std::span<const std::string_view> args, std::shared_ptr<ReplyTarget> target,
         std::uint64_t tag) {
  return script.run(by_key(caller, first_key(keys)), keys, args, std::move(target), tag);
}

}  // namespace corral::upstream
