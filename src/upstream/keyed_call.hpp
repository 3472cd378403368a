// Awaitable calls through a KeyedCaller, like call.hpp's on one connection: a fleet or versioned
// conversation reads top to bottom whether the upstream is one server or a cluster.
#pragma once

#include <utility>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "upstream/call.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

class KeyedCaller;
class Script;

// Contract: awaited on the caller's executor. `argv` touches keys of `key`'s slot only.
boost::asio::awaitable<CallResult> call(KeyedCaller& caller, std::string_view key,
                                        std::span<const std::string_view> argv);
// A Lua script on the node of keys[0]'s slot (every key shares it): EVALSHA once its digest is
// known, EVAL when that node answers NOSCRIPT.
boost::asio::awaitable<CallResult> call(KeyedCaller& caller, const Script& script,
                                        std::span<const std::string_view> keys,
                                        std::span<const std::string_view> args);
// `argv` on one primary (KeyedCaller::primaries() names them).
boost::asio::awaitable<CallResult> call_primary(KeyedCaller& caller, std::string_view primary,
                                                std::span<const std::string_view> argv);

// The script without awaiting it (its reply reaches `target`, after at most one NOSCRIPT retry);
// false, having told nobody, when it could not be sent.
bool run(KeyedCaller& caller, const Script& script, std::span<const std::string_view> keys,
         std::span<const std::string_view> args, std::shared_ptr<ReplyTarget> target,
         std::uint64_t tag);

}  // namespace corral::upstream
