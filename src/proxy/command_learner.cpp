// The learner's loop: wait for a ready connection, read COMMAND once, then wait for the next
// reconnect (the upstream may have been upgraded or replaced behind the same address).
#include <utility>

#include "proxy/command_learner.hpp"

#include <chrono>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "proxy/learned_commands.hpp"
#include "upstream/call.hpp"
#include "upstream/connection.hpp"
#include "upstream/single/pool.hpp"

namespace corral::proxy {

namespace asio = boost::asio;

namespace {
constexpr std::string_view kCommand = "*1\r\n$7\r\nCOMMAND\r\n";
// How often the connection's state is looked at; a reconnect shorter than this may be missed,
// which only delays learning until the next one.
constexpr std::chrono::milliseconds kPoll{250};
}  // namespace

CommandLearner::CommandLearner(upstream::Pool& pool, int database)
    : pool_(pool), database_(database) {}

void CommandLearner::start() {
  auto& connection = pool_.shared(database_, 0);
  asio::co_spawn(
      connection.executor(), [self = shared_from_this()] { return self->loop(); }, asio::detached);
}

asio::awaitable<void> CommandLearner::loop() {
  auto self = shared_from_this();
  auto& connection = pool_.shared(database_, 0);
  asio::steady_timer timer(connection.executor());
  const auto pause = [&]() -> asio::awaitable<bool> {
    timer.expires_after(kPoll);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
  };
  for (;;) {
    while (connection.state() != upstream::Link::State::ready) {
      if (connection.state() == upstream::Link::State::closed || !co_await pause()) co_return;
    }
    const auto result = co_await upstream::call(connection, kCommand);
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
    while (connection.state() == upstream::Link::State::ready) {
      if (!co_await pause()) co_return;
    }
  }
}

}  // namespace corral::proxy
