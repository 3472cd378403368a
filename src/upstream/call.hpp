// One command on an upstream connection, awaited: `co_await call(connection, argv)` gives the
// reply bytes or the kind of failure, so Corral's own conversations with Redis read top to bottom.
#pragma once

#include <utility>

#include <span>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "upstream/errors.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

class Connection;
class Script;

// Why a call has no reply. Compared by kind; `CallResult::error` carries the text for logs and
// clients.
enum class CallError {
  none,
  unavailable,      // not sent: the connection could not take it (backing off, closed, full)
  connection_lost,  // sent, then the connection died: the command may or may not have run
  timed_out,        // sent, no reply within the command timeout (the connection was reset)
  closed,           // the connection was closed on purpose while the command was pending
};

// An expected-like result: a reply (possibly an error reply from Redis: see redis_error()) or a
// failure kind with its text (without the leading '-').
struct CallResult {
  CallError kind = CallError::none;
  std::string reply;  // one complete RESP reply when ok()
  std::string error;  // the failure's text when !ok()

  bool ok() const { return kind == CallError::none; }
  // Redis answered with an error reply ("-ERR ...", "-NOSCRIPT ...").
  bool redis_error() const { return ok() && !reply.empty() && reply.front() == '-'; }

  // A failure of `kind` (ErrorKind's connection kinds; any other counts as connection_lost).
  static CallResult failure(ErrorKind kind, std::string_view text);
};

// Contract: awaited on the connection's own executor (its io thread). The connection's
// command_timeout applies (0: none). Never throws for network or Redis errors.
boost::asio::awaitable<CallResult> call(Connection& connection, std::string_view resp_command);
boost::asio::awaitable<CallResult> call(Connection& connection,
                                        std::span<const std::string_view> argv);
// A Lua script: EVALSHA once its digest is known, EVAL on NOSCRIPT (see Script::run).
boost::asio::awaitable<CallResult> call(Connection& connection, const Script& script,
                                        std::span<const std::string_view> keys,
                                        std::span<const std::string_view> args);
// The same through a sender that picks the connection itself (a cluster slot's node); `send`
// must stay valid until the call completes. Awaited on the thread the sender's replies come on.
boost::asio::awaitable<CallResult> call(const CommandSender& send, std::string_view resp_command);
boost::asio::awaitable<CallResult> call(const CommandSender& send, const Script& script,
                                        std::span<const std::string_view> keys,
                                        std::span<const std::string_view> args);

}  // namespace corral::upstream
