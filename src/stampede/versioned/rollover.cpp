// The rollover script and the switch of this process to the new version.
#include "stampede/versioned/rollover.hpp"

#include <spdlog/spdlog.h>

#include "resp/encoder.hpp"
#include "stampede/versioned/pointer_watch.hpp"
#include "upstream/keyed_call.hpp"
#include "upstream/script.hpp"

namespace corral::stampede {

namespace {

// KEYS: pointer, metadata hash. ARGV: new version, expected current ("" for any), who asks.
// Replies {status, current}: ok | mismatch | same. Times are Redis's (TIME), in milliseconds.
const upstream::Script kRollover(R"lua(
local current = redis.call('GET', KEYS[1]) or '0'
if ARGV[2] ~= '' and current ~= ARGV[2] then return {'mismatch', current} end
if current == ARGV[1] then return {'same', current} end
local now = redis.call('TIME')
local ms = now[1] .. string.format('%03d', math.floor(tonumber(now[2]) / 1000))
local new = 'v' .. ARGV[1] .. ':'
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], new .. 'created', ms, new .. 'by', ARGV[3], new .. 'previous', current)
redis.call('HDEL', KEYS[2], new .. 'retired')
if current ~= '0' then redis.call('HSET', KEYS[2], 'v' .. current .. ':retired', ms) end
return {'ok', current}
)lua");

upstream::CallResult reply_with(std::string reply) {
  upstream::CallResult result;
  result.reply = std::move(reply);
  return result;
}

}  // namespace

boost::asio::awaitable<upstream::CallResult> rollover(std::shared_ptr<upstream::KeyedCaller> caller,
                                                      RolloverRequest request) {
  const auto& pointer = request.policy.settings->versioned->pointer;
  const std::string metadata = version_metadata_key(pointer);
  const std::string version = std::to_string(request.version);
  const std::string_view keys[] = {pointer, metadata};
  const std::string_view args[] = {version, request.expected_text, request.who};
  auto result = co_await upstream::call(*caller, kRollover, keys, args);
  if (!result.ok() || result.redis_error()) co_return result;

  const auto verdict = read_script_verdict(result.reply);
  if (!verdict) co_return reply_with(error_reply("ERR unexpected rollover reply"));
  const auto current = std::to_string(verdict->current);
  if (verdict->status == "mismatch") {
    co_return reply_with(error_reply("VERSION_MISMATCH current version is " + current +
                                     ", expected " + std::to_string(request.expected)));
  }
  if (verdict->status == "same") {
    co_return reply_with(error_reply("ERR version " + current + " is already current"));
  }
  // Before the reply: once the client hears OK, every read of this process uses the new one.
  PointerWatch::apply_rollover(request.policy.runtime->versions(), request.version,
                               verdict->current);
  spdlog::info("policy '{}': rolled over to version {} (was {})", request.policy.settings->prefix,
               request.version, verdict->current);
  std::string reply;
  resp::append_integer(reply, static_cast<std::int64_t>(verdict->current));
  co_return reply_with(std::move(reply));
}

}  // namespace corral::stampede
