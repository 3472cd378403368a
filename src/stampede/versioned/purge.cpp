// The purge check script, the refusals it leads to, and the SCAN + UNLINK loop.
#include "stampede/versioned/purge.hpp"

#include <chrono>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "stampede/versioned/pointer_watch.hpp"
#include "stampede/versioned/version_key.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/keyed_call.hpp"
#include "upstream/keyed_caller.hpp"
#include "upstream/script.hpp"

namespace corral::stampede {

namespace {

using resp::Reply;
using upstream::CallResult;

// KEYS: pointer, metadata hash. ARGV: version, keep, grace in milliseconds. Replies
// {status, current, detail}: ok | current | newer (never current) | kept (detail: rollovers until
// it leaves the `keep` most recent versions) | grace (detail: milliseconds left).
const upstream::Script kPurgeCheck(R"lua(
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local version = tonumber(ARGV[1])
if version == current then return {'current', current, 0} end
local retired = redis.call('HGET', KEYS[2], 'v' .. ARGV[1] .. ':retired')
if not retired and version > current then return {'newer', current, 0} end
local recent = current
for rank = 1, tonumber(ARGV[2]) - 1 do
  recent = tonumber(redis.call('HGET', KEYS[2], 'v' .. recent .. ':previous') or '0')
  if recent == 0 then break end
  if recent == version then return {'kept', current, tonumber(ARGV[2]) - rank} end
end
if retired then
  local now = redis.call('TIME')
  local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  local left = tonumber(retired) + tonumber(ARGV[3]) - ms
  if left > 0 then return {'grace', current, left} end
end
return {'ok', current, 0}
)lua");

constexpr std::string_view kScanCount = "1000";

CallResult reply_with(std::string reply) {
  CallResult result;
  result.reply = std::move(reply);
  return result;
}

// "2024-05-01T12:00:00.123Z", `from_now` after the local wall clock.
std::string utc_after(std::chrono::milliseconds from_now) {
  const auto at = std::chrono::system_clock::now() + from_now;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch());
  const std::time_t seconds = ms.count() / 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[40];
  const auto n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(text, n) + "." + std::to_string(1000 + ms.count() % 1000).substr(1) + "Z";
}

// Why the check script refuses the purge, as an error reply; nullopt: go ahead.
std::optional<std::string> refusal(const ScriptVerdict& verdict, const std::string& prefix,
                                   std::uint64_t version_number, config::Duration grace) {
  const std::string version = "version " + std::to_string(version_number) + " of '" + prefix + "'";
  const std::string current = std::to_string(verdict.current);
  const auto& status = verdict.status;
  if (status == "current") {
    return error_reply("ERR " + version + " is current; roll over to another first");
  }
  if (status == "newer") {
    return error_reply("ERR " + version + " is newer than the current version " + current +
                       " and was never current (still loading?)");
  }
  if (status == "kept") {
    return error_reply("ERR " + version + " is among the most recent versions the " +
                       "fallback may read (keep); purgeable after " +
                       std::to_string(verdict.detail) + " more rollover(s)");
  }
  if (status == "grace") {
    const std::chrono::milliseconds left(verdict.detail);
    return error_reply("ERR " + version + " is in its grace period (" +
                       std::to_string(grace.count()) + "ms) until " + utc_after(left) + ", " +
                       std::to_string(left.count()) + "ms from now");
  }
  return std::nullopt;
}

// A batch failed without a reply: the client hears how far the purge got.
CallResult interrupted(const CallResult& failure, std::int64_t deleted) {
  if (deleted == 0) return failure;
  return reply_with(error_reply("ERR purge interrupted after " + std::to_string(deleted) +
                                " keys: " + failure.error));
}

// UNLINK of SCAN's finds: one command for them all, or on a cluster one per slot among them
// (routed by slot, so a slot that moved since the SCAN is still found). nullopt: all went;
// otherwise the failure or error reply that stopped it.
boost::asio::awaitable<std::optional<CallResult>> unlink(upstream::KeyedCaller& caller,
                                                         const std::vector<Reply>& found,
                                                         std::int64_t& deleted) {
  std::map<unsigned, std::vector<std::string_view>> groups;
  for (const auto& key : found) {
    groups[caller.by_slot() ? upstream::key_slot(key.text) : 0].push_back(key.text);
  }
  for (auto& [slot, keys] : groups) {
    std::vector<std::string_view> unlink_argv{"UNLINK"};
    unlink_argv.insert(unlink_argv.end(), keys.begin(), keys.end());
    auto unlinked = co_await upstream::call(caller, keys.front(), unlink_argv);
    if (!unlinked.ok() || unlinked.redis_error()) co_return unlinked;
    const auto count = resp::decode_reply(unlinked.reply);
    if (count && count->type == Reply::Type::integer) deleted += count->integer;
  }
  co_return std::nullopt;
}

// SCAN + UNLINK on one primary until its cursor comes back 0; nullopt when it did.
boost::asio::awaitable<std::optional<CallResult>> purge_primary(upstream::KeyedCaller& caller,
                                                                const std::string& primary,
                                                                const std::string& pattern,
                                                                std::int64_t& deleted) {
  std::string cursor = "0";
  do {
    const std::string_view scan_argv[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", kScanCount};
    auto scan = co_await upstream::call_primary(caller, primary, scan_argv);
    if (!scan.ok() || scan.redis_error()) co_return scan;
    const auto decoded = resp::decode_reply(scan.reply);
    if (!decoded || decoded->type != Reply::Type::array || decoded->elements.size() != 2) {
      co_return reply_with(error_reply("ERR unexpected SCAN reply"));
    }
    cursor = decoded->elements[0].text;
    if (decoded->elements[1].elements.empty()) continue;
    if (auto stopped = co_await unlink(caller, decoded->elements[1].elements, deleted)) {
      co_return stopped;
    }
  } while (cursor != "0");
  co_return std::nullopt;
}

}  // namespace

boost::asio::awaitable<CallResult> purge(std::shared_ptr<upstream::KeyedCaller> caller,
                                         VersionedPolicy policy, std::uint64_t version) {
  const auto& versioned = *policy.settings->versioned;
  const std::string& prefix = policy.settings->prefix;
  const std::string metadata = version_metadata_key(versioned.pointer);
  const std::string version_text = std::to_string(version);
  const std::string keep = std::to_string(versioned.keep);
  const std::string grace = std::to_string(versioned.grace.count());
  const std::string_view keys[] = {versioned.pointer, metadata};
  const std::string_view args[] = {version_text, keep, grace};
  auto check = co_await upstream::call(*caller, kPurgeCheck, keys, args);
  if (!check.ok() || check.redis_error()) co_return check;
  const auto verdict = read_script_verdict(check.reply);
  if (!verdict) co_return reply_with(error_reply("ERR unexpected purge check reply"));
  if (auto refused = refusal(*verdict, prefix, version, versioned.grace)) {
    co_return reply_with(std::move(*refused));
  }

  // A version's keys hash to every slot: on a cluster each primary scans its own.
  const auto primaries = caller->primaries();
  if (primaries.empty()) {
    co_return reply_with(error_reply("ERR purge needs the cluster's slot map; try again"));
  }
  const std::string pattern = version_pattern(prefix, version);
  std::int64_t deleted = 0;
  for (const auto& primary : primaries) {
    auto stopped = co_await purge_primary(*caller, primary, pattern, deleted);
    if (!stopped) continue;
    if (!stopped->ok()) co_return interrupted(*stopped, deleted);
    co_return *stopped;
  }
  spdlog::info("policy '{}': purged version {} ({} keys on {} primaries)", prefix, version, deleted,
               primaries.size());
  std::string reply;
  resp::append_integer(reply, deleted);
  co_return reply_with(std::move(reply));
}

}  // namespace corral::stampede
