// CORRAL.ROLLOVER (a compare-and-set Lua script on the pointer key) and CORRAL.PURGE (a check
// script, then SCAN + UNLINK batches chained on the replies, never blocking the io thread).
#include "proxy/version_commands.hpp"

#include <chrono>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "resp/reply_constants.hpp"
#include "stampede/cache_runtime.hpp"
#include "stampede/policy_runtime.hpp"
#include "stampede/versioned/pointer_watch.hpp"
#include "stampede/versioned/versioned_origin.hpp"
#include "upstream/connection.hpp"
#include "upstream/errors.hpp"
#include "upstream/pool.hpp"
#include "upstream/script.hpp"

namespace corral::proxy {

namespace {

using resp::Reply;

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

std::string error_reply(std::string_view message) {
  std::string out;
  resp::append_error(out, message);
  return out;
}

std::string integer_reply(std::int64_t value) {
  std::string out;
  resp::append_integer(out, value);
  return out;
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

// The policy a command names, with its state; `error` says why there is none.
struct Target {
  std::shared_ptr<const stampede::PolicySet> policies;
  const config::PolicySettings* policy = nullptr;
  std::shared_ptr<stampede::PolicyRuntime> runtime;
  std::string error;
};

Target find_versioned(stampede::CacheRuntime* cache, std::string_view prefix) {
  Target found;
  if (cache == nullptr) {
    found.error = "ERR caching is off: no versioned policies";
    return found;
  }
  found.policies = cache->policies();
  const auto& settings = found.policies->settings;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    if (settings[i].prefix != prefix) continue;
    if (!settings[i].versioned) {
      found.error = "ERR policy '" + settings[i].prefix + "' is not versioned";
      return found;
    }
    found.policy = &settings[i];
    found.runtime = found.policies->runtimes[i];
    return found;
  }
  found.error = "ERR no policy with prefix '" + std::string(prefix) + "'";
  return found;
}

// The fields of a script's {status, current, detail} reply.
struct Verdict {
  std::string status;
  std::uint64_t current = 0;
  std::int64_t detail = 0;
};

std::optional<Verdict> read_verdict(std::string_view reply) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != Reply::Type::array || decoded->elements.size() < 2) {
    return std::nullopt;
  }
  const auto& elements = decoded->elements;
  Verdict verdict{elements[0].text};
  if (elements[1].type == Reply::Type::integer) {
    verdict.current = static_cast<std::uint64_t>(elements[1].integer);
  } else {
    verdict.current = stampede::parse_version(elements[1].text).value_or(0);
  }
  if (elements.size() > 2) verdict.detail = elements[2].integer;
  return verdict;
}

// Relays a Redis-side failure or error reply; true when `reply` was one.
bool relay_error(upstream::ReplyTarget& client, std::uint64_t tag, std::string_view reply) {
  if (reply.empty() || reply.front() != '-') return false;
  client.on_reply(tag, reply);
  return true;
}

class RolloverReply final : public upstream::ReplyTarget {
 public:
  RolloverReply(Target policy, std::uint64_t version, std::uint64_t expected,
                std::shared_ptr<ReplyTarget> client)
      : policy_(std::move(policy)),
        version_(version),
        expected_(expected),
        client_(std::move(client)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (relay_error(*client_, tag, reply)) return;
    const auto verdict = read_verdict(reply);
    if (!verdict) return client_->on_reply(tag, error_reply("ERR unexpected rollover reply"));
    const auto current = std::to_string(verdict->current);
    if (verdict->status == "mismatch") {
      return client_->on_reply(tag, error_reply("VERSION_MISMATCH current version is " + current +
                                                ", expected " + std::to_string(expected_)));
    }
    if (verdict->status == "same") {
      return client_->on_reply(tag, error_reply("ERR version " + current + " is already current"));
    }
    // Before the reply: once the client hears OK, every read of this process uses the new one.
    stampede::PointerWatch::apply_rollover(policy_.runtime->versions(), version_, verdict->current);
    spdlog::info("policy '{}': rolled over to version {} (was {})", policy_.policy->prefix,
                 version_, verdict->current);
    client_->on_reply(tag, integer_reply(static_cast<std::int64_t>(verdict->current)));
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  Target policy_;
  std::uint64_t version_;
  std::uint64_t expected_;
  std::shared_ptr<ReplyTarget> client_;
};

void rollover(const VersionCall& call, Target policy, std::uint64_t tag,
              const std::shared_ptr<upstream::ReplyTarget>& target) {
  const auto version = stampede::parse_version(call.argv[2]);
  const auto expected = call.argv.size() > 3 ? stampede::parse_version(call.argv[3])
                                             : std::optional<std::uint64_t>(0);
  if (call.argv.size() > 4) return target->on_reply(tag, error_reply("ERR syntax error"));
  if (!version || *version == 0) {
    return target->on_reply(tag, error_reply("ERR new_version must be a positive integer"));
  }
  if (!expected) {
    return target->on_reply(tag,
                            error_reply("ERR expected_old_version must be a non-negative integer"));
  }
  const auto& pointer = policy.policy->versioned->pointer;
  const std::string metadata = stampede::version_metadata_key(pointer);
  const std::string who =
      call.client.name.empty() ? "client id " + std::to_string(call.client.id) : call.client.name;
  const std::string_view keys[] = {pointer, metadata};
  const std::string_view args[] = {call.argv[2], call.argv.size() > 3 ? call.argv[3] : "", who};
  auto reply = std::make_shared<RolloverReply>(std::move(policy), *version, *expected, target);
  auto& connection = call.pool.shared(call.cache->database(), call.client.id);
  if (!kRollover.run(connection, keys, args, reply, tag))
    target->on_failure(tag, upstream::kErrUnavailable);
}

// PURGE after the check script: SCAN batches, each followed by an UNLINK of what it found.
class Purge final : public upstream::ReplyTarget, public std::enable_shared_from_this<Purge> {
 public:
  enum class Step : std::uint64_t { check, scan, unlink, last_unlink };

  Purge(upstream::Connection& connection, std::string prefix, std::uint64_t version,
        config::Duration grace, std::shared_ptr<ReplyTarget> client, std::uint64_t client_tag)
      : connection_(connection.weak_from_this()),
        prefix_(std::move(prefix)),
        version_(version),
        grace_(grace),
        client_(std::move(client)),
        client_tag_(client_tag) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (answered_) return;
    if (reply.starts_with('-')) return answer(std::string(reply));
    switch (static_cast<Step>(tag)) {
      case Step::check:
        return on_check(reply);
      case Step::scan:
        return on_scan(reply);
      case Step::unlink:
      case Step::last_unlink:
        return on_unlink(static_cast<Step>(tag), reply);
    }
  }
  void on_failure(std::uint64_t, std::string_view error) override {
    if (answered_) return;
    if (deleted_ == 0) {
      answered_ = true;
      return client_->on_failure(client_tag_, error);
    }
    answer(error_reply("ERR purge interrupted after " + std::to_string(deleted_) +
                       " keys: " + std::string(error)));
  }

 private:
  void on_check(std::string_view reply);
  void on_scan(std::string_view reply);
  void on_unlink(Step step, std::string_view reply) {
    const auto decoded = resp::decode_reply(reply);
    if (decoded && decoded->type == Reply::Type::integer) deleted_ += decoded->integer;
    if (step != Step::last_unlink) return;
    spdlog::info("policy '{}': purged version {} ({} keys)", prefix_, version_, deleted_);
    answer(integer_reply(deleted_));
  }
  void send(std::span<const std::string_view> argv, Step step) {
    std::string command;
    resp::append_command(command, argv);
    const auto connection = connection_.lock();
    if (connection &&
        connection->send(command, shared_from_this(), static_cast<std::uint64_t>(step))) {
      return;
    }
    on_failure(0, upstream::kErrUnavailable);
  }
  void scan(std::string_view cursor) {
    const std::string pattern = stampede::version_pattern(prefix_, version_);
    const std::string_view argv[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
    send(argv, Step::scan);
  }
  void answer(const std::string& reply) {
    answered_ = true;
    client_->on_reply(client_tag_, reply);
  }

  std::weak_ptr<upstream::Connection> connection_;
  std::string prefix_;
  std::uint64_t version_;
  config::Duration grace_;
  std::shared_ptr<ReplyTarget> client_;
  std::uint64_t client_tag_;
  std::int64_t deleted_ = 0;
  bool answered_ = false;
};

void Purge::on_check(std::string_view reply) {
  const auto verdict = read_verdict(reply);
  if (!verdict) return answer(error_reply("ERR unexpected purge check reply"));
  const std::string version = "version " + std::to_string(version_) + " of '" + prefix_ + "'";
  const std::string current = std::to_string(verdict->current);
  const auto& status = verdict->status;
  if (status == "current") {
    return answer(error_reply("ERR " + version + " is current; roll over to another first"));
  }
  if (status == "newer") {
    return answer(error_reply("ERR " + version + " is newer than the current version " + current +
                              " and was never current (still loading?)"));
  }
  if (status == "kept") {
    return answer(error_reply("ERR " + version + " is among the most recent versions the " +
                              "fallback may read (keep); purgeable after " +
                              std::to_string(verdict->detail) + " more rollover(s)"));
  }
  if (status == "grace") {
    const std::chrono::milliseconds left(verdict->detail);
    return answer(error_reply("ERR " + version + " is in its grace period (" +
                              std::to_string(grace_.count()) + "ms) until " + utc_after(left) +
                              ", " + std::to_string(left.count()) + "ms from now"));
  }
  scan("0");
}

void Purge::on_scan(std::string_view reply) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != Reply::Type::array || decoded->elements.size() != 2) {
    return answer(error_reply("ERR unexpected SCAN reply"));
  }
  const std::string cursor = decoded->elements[0].text;
  const auto& keys = decoded->elements[1].elements;
  const bool last = cursor == "0";
  if (!keys.empty()) {
    std::vector<std::string_view> argv{"UNLINK"};
    for (const auto& key : keys) argv.push_back(key.text);
    send(argv, last ? Step::last_unlink : Step::unlink);
  } else if (last) {
    return on_unlink(Step::last_unlink, resp::kReplyZero);
  }
  // Pipelined behind the UNLINK: replies come back in order, so the count is complete when the
  // last SCAN's UNLINK answers.
  if (!last && !answered_) scan(cursor);
}

void purge(const VersionCall& call, Target policy, std::uint64_t tag,
           const std::shared_ptr<upstream::ReplyTarget>& target) {
  const auto version = stampede::parse_version(call.argv[2]);
  if (!version || *version == 0) {
    return target->on_reply(tag, error_reply("ERR version must be a positive integer"));
  }
  const auto& versioned = *policy.policy->versioned;
  const std::string metadata = stampede::version_metadata_key(versioned.pointer);
  const std::string keep = std::to_string(versioned.keep);
  const std::string grace = std::to_string(versioned.grace.count());
  const std::string_view keys[] = {versioned.pointer, metadata};
  const std::string_view args[] = {call.argv[2], keep, grace};
  auto& connection = call.pool.shared(call.cache->database(), call.client.id);
  auto job = std::make_shared<Purge>(connection, policy.policy->prefix, *version, versioned.grace,
                                     target, tag);
  const auto step = static_cast<std::uint64_t>(Purge::Step::check);
  if (!kPurgeCheck.run(connection, keys, args, job, step))
    target->on_failure(tag, upstream::kErrUnavailable);
}

}  // namespace

bool is_version_command(std::string_view row_name) {
  return row_name == "corral.rollover" || row_name == "corral.purge";
}

void run_version_command(const VersionCall& call, std::uint64_t tag,
                         const std::shared_ptr<upstream::ReplyTarget>& target) {
  if (!call.client.admin) {
    return target->on_reply(
        tag, error_reply("NOPERM CORRAL admin commands need AUTH with client.admin_password"));
  }
  auto policy = find_versioned(call.cache, call.argv[1]);
  if (!policy.error.empty()) return target->on_reply(tag, error_reply(policy.error));
  if (call.command == "corral.rollover") return rollover(call, std::move(policy), tag, target);
  purge(call, std::move(policy), tag, target);
}

}  // namespace corral::proxy
