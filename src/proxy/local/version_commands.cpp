// CORRAL.ROLLOVER and CORRAL.PURGE: argument checks and the admin check here; the conversation
// with Redis is stampede/versioned's (rollover.hpp, purge.hpp), run as a coroutine on this thread.
#include "proxy/local/version_commands.hpp"

#include <utility>

#include <optional>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "stampede/policy/cache_runtime.hpp"
#include "stampede/versioned/purge.hpp"
#include "stampede/versioned/rollover.hpp"
#include "stampede/versioned/version_key.hpp"
#include "stampede/versioned/versioned_policy.hpp"
#include "upstream/call.hpp"
#include "upstream/keyed_caller.hpp"

namespace corral::proxy {

namespace {

using stampede::error_reply;

// Runs one admin conversation with Redis and hands its outcome to the request's reply slot.
template <typename Conversation>
void answer_when_done(upstream::KeyedCaller& caller, Conversation conversation, std::uint64_t tag,
                      const std::shared_ptr<upstream::ReplyTarget>& target) {
  boost::asio::co_spawn(
      caller.executor(),
      [conversation = std::move(conversation), target,
       tag]() mutable -> boost::asio::awaitable<void> {
        const auto result = co_await conversation();
        if (result.ok()) {
          target->on_reply(tag, result.reply);
        } else {
          target->on_failure(tag, result.error);
        }
      },
      boost::asio::detached);
}

void rollover(const VersionCall& call, stampede::VersionedPolicy policy, std::uint64_t tag,
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
  stampede::RolloverRequest request{
      std::move(policy), *version, *expected,
      call.argv.size() > 3 ? std::string(call.argv[3]) : std::string(),
      call.client.name.empty() ? "client id " + std::to_string(call.client.id) : call.client.name};
  answer_when_done(
      call.caller,
      [caller = call.caller.shared_from_this(), request = std::move(request)]() mutable {
        return stampede::rollover(caller, std::move(request));
      },
      tag, target);
}

void purge(const VersionCall& call, stampede::VersionedPolicy policy, std::uint64_t tag,
           const std::shared_ptr<upstream::ReplyTarget>& target) {
  const auto version = stampede::parse_version(call.argv[2]);
  if (!version || *version == 0) {
    return target->on_reply(tag, error_reply("ERR version must be a positive integer"));
  }
  answer_when_done(
      call.caller,
      [caller = call.caller.shared_from_this(), policy = std::move(policy),
       version = *version]() mutable {
        return stampede::purge(caller, std::move(policy), version);
      },
      tag, target);
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
  auto policy = stampede::find_versioned_policy(call.cache, call.argv[1]);
  if (!policy.error.empty()) return target->on_reply(tag, error_reply(policy.error));
  if (call.command == "corral.rollover") return rollover(call, std::move(policy), tag, target);
  purge(call, std::move(policy), tag, target);
}

}  // namespace corral::proxy
