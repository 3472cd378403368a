// The learner's loop: ask COMMAND (and HELLO, for the version) until a server answers, then wait
// for the server to change (the upstream may have been upgraded or replaced behind the address).
#include <utility>

#include "proxy/commands/command_learner.hpp"

#include <chrono>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "proxy/commands/learned_commands.hpp"
#include "upstream/call.hpp"
#include "upstream/server_version.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace asio = boost::asio;

namespace {
constexpr std::string_view kCommand = "*1\r\n$7\r\nCOMMAND\r\n";
// HELLO without a version changes nothing on the connection and names the server's version, which
// INFO and Corral's own HELLO report (a server before Redis 6.2 refuses it: ignored).
constexpr std::string_view kHello = "*1\r\n$5\r\nHELLO\r\n";
// How often the connection's state is looked at; a reconnect shorter than this may be missed,
// which only delays learning until the next one.
constexpr std::chrono::milliseconds kPoll{250};
}  // namespace

CommandLearner::CommandLearner(const asio::any_io_executor& executor, upstream::Upstream& upstream)
    : executor_(executor), upstream_(upstream) {}

void CommandLearner::start() {
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->loop(); }, asio::detached);
}

asio::awaitable<void> CommandLearner::loop() {
  auto self = shared_from_this();
  asio::steady_timer timer(executor_);
  const auto pause = [&]() -> asio::awaitable<bool> {
    timer.expires_after(kPoll);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
  };
  for (;;) {
    // Read before asking: a change while the question is out is learned again.
    const auto epoch = upstream_.server_epoch();
    const auto result = co_await upstream_.call_server(std::string(kCommand));
    if (!result.ok() && result.kind == upstream::CallError::unavailable) {
      // No server could take it yet (starting, or every one down): ask again shortly.
      if (!co_await pause()) co_return;
      continue;
    }
    if (!result.ok() || result.redis_error()) {
      spdlog::warn("upstream COMMAND failed ({}); the built-in command table stays in force",
                   result.ok() ? result.reply.substr(0, 120) : result.error);
    } else if (auto learned = learn_commands(result.reply)) {
      if (!learned->rows().empty()) {
        spdlog::info("learned {} command(s) from the upstream that the built-in table lacks",
                     learned->rows().size());
      }
      publish_learned_commands(std::move(learned));
    } else {
      spdlog::warn("upstream COMMAND reply unreadable; the built-in command table stays in force");
    }
    const auto hello = co_await upstream_.call_server(std::string(kHello));
    if (hello.ok() && !hello.redis_error()) upstream::note_hello_reply(hello.reply);
    while (upstream_.server_epoch() == epoch) {
      if (!co_await pause()) co_return;
    }
  }
}

}  // namespace corral::proxy
