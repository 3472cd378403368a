// The audit's conversation: ACL WHOAMI, then one ACL DRYRUN per refused command, until the
// upstream answers (it may still be starting).
#include "proxy/refusal_audit.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <span>
#include <string_view>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "upstream/call.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace asio = boost::asio;

namespace {
// What Corral refuses that a script could still call, each with arguments that pass DRYRUN's
// arity check; `name` is the command table's row (what client.allow_commands lets through).
struct Probe {
  std::string_view name;
  std::vector<std::string_view> argv;
};

const std::vector<Probe>& probes() {
  static const std::vector<Probe> list{
      {"flushall", {"FLUSHALL"}},
      {"flushdb", {"FLUSHDB"}},
      {"swapdb", {"SWAPDB", "0", "1"}},
      {"config|set", {"CONFIG", "SET", "maxmemory", "0"}},
      {"shutdown", {"SHUTDOWN"}},
      {"debug", {"DEBUG", "SLEEP", "0"}},
      {"migrate", {"MIGRATE", "127.0.0.1", "1", "k", "0", "10"}},
      {"cluster|delslots", {"CLUSTER", "DELSLOTS", "1"}},
      {"cluster|meet", {"CLUSTER", "MEET", "127.0.0.1", "1"}},
      {"cluster|reset", {"CLUSTER", "RESET"}},
      {"replicaof", {"REPLICAOF", "NO", "ONE"}},
      {"failover", {"FAILOVER"}},
      {"module|load", {"MODULE", "LOAD", "x"}},
      {"acl|setuser", {"ACL", "SETUSER", "x"}},
      {"function|flush", {"FUNCTION", "FLUSH"}},
      {"save", {"SAVE"}},
      {"bgsave", {"BGSAVE"}},
  };
  return list;
}

constexpr std::string_view kDryRunAllowed = "+OK\r\n";
constexpr std::chrono::milliseconds kRetry{500};

// client.allow_commands names "CONFIG SET" or "CONFIG"; the table, "config|set".
bool allowed_by_config(const std::vector<std::string>& allowed, std::string_view name) {
  const auto container = name.substr(0, name.find('|'));
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& configured) {
    std::string normalized;
    for (char c : configured) {
      normalized.push_back(
          c == ' ' ? '|' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return normalized == name || normalized == container;
  });
}

std::string command_of(std::span<const std::string_view> argv) {
  std::string out;
  resp::append_command(out, argv);
  return out;
}
}  // namespace

RefusalAudit::RefusalAudit(const asio::any_io_executor& executor, upstream::Upstream& upstream,
                           std::atomic<int>& runnable)
    : executor_(executor), upstream_(upstream), runnable_(runnable) {}

void RefusalAudit::start(std::vector<std::string> allowed) {
  asio::co_spawn(
      executor_,
      [self = shared_from_this(), allowed = std::move(allowed), generation = ++generation_] {
        return self->run(allowed, generation);
      },
      asio::detached);
}

asio::awaitable<void> RefusalAudit::run(std::vector<std::string> allowed, unsigned generation) {
  auto self = shared_from_this();
  asio::steady_timer timer(executor_);
  const std::string_view whoami_argv[] = {"ACL", "WHOAMI"};
  upstream::CallResult whoami;
  // The upstream may still be starting: asked again until some server takes the question.
  for (;;) {
    whoami = co_await upstream_.call_server(command_of(whoami_argv));
    if (generation != generation_) co_return;
    if (whoami.ok()) break;
    timer.expires_after(kRetry);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec || generation != generation_) co_return;
  }
  const auto decoded = resp::decode_reply(whoami.reply);
  if (!decoded || decoded->type != resp::Reply::Type::bulk) {
    runnable_.store(kRefusalAuditUnknown);
    spdlog::warn(
        "cannot check the upstream user's rights (ACL WHOAMI answered {}): whether a "
        "script may run what Corral refuses is unknown (docs/security.md)",
        whoami.reply.substr(0, 120));
    co_return;
  }
  std::string runnable;
  int count = 0;
  for (const auto& probe : probes()) {
    if (allowed_by_config(allowed, probe.name)) continue;
    std::vector<std::string_view> argv{"ACL", "DRYRUN", decoded->text};
    argv.insert(argv.end(), probe.argv.begin(), probe.argv.end());
    const auto result = co_await upstream_.call_server(command_of(argv));
    if (generation != generation_) co_return;
    if (!result.ok() || result.redis_error()) {
      runnable_.store(kRefusalAuditUnknown);
      spdlog::warn(
          "cannot check the upstream user's rights (ACL DRYRUN: {}): whether a script "
          "may run what Corral refuses is unknown (docs/security.md)",
          result.ok() ? result.reply.substr(0, 120) : result.error);
      co_return;
    }
    if (result.reply != kDryRunAllowed) continue;
    runnable.append(runnable.empty() ? "" : ", ").append(probe.name);
    ++count;
  }
  runnable_.store(count);
  if (count > 0) {
    spdlog::warn(
        "upstream user '{}' may run {} command(s) that Corral refuses to clients: {}; a "
        "script (EVAL, FCALL) can still call them. Restrict the user's ACL as "
        "docs/security.md shows",
        decoded->text, count, runnable);
  }
}

}  // namespace corral::proxy
