// Tests of the awaitable call against a real redis-server: a reply, an error reply, a command
// that outlives the command timeout (CLIENT PAUSE), and a connection that dies under a command.
#include <utility>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "redis_server_process.hpp"
#include "upstream/call.hpp"
#include "upstream/connection.hpp"
#include "upstream/script.hpp"

namespace asio = boost::asio;
using corral::upstream::call;
using corral::upstream::CallError;
using corral::upstream::CallResult;
using corral::upstream::Connection;
using corral::upstream::ConnectionOptions;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<Connection> connect(asio::io_context& io, unsigned short port,
                                    corral::config::Duration command_timeout) {
  ConnectionOptions options;
  options.server = {"127.0.0.1", port};
  options.command_timeout = command_timeout;
  options.reconnect = false;
  auto connection = std::make_shared<Connection>(io.get_executor(), options, nullptr);
  connection->start();
  return connection;
}

// Runs `body` as a coroutine on `io` until it returns (at most ten seconds).
template <typename Body>
void run(asio::io_context& io, Body body) {
  bool finished = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await body();
        finished = true;
      },
      asio::detached);
  io.run_for(10s);
  REQUIRE(finished);
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds duration) {
  asio::steady_timer timer(co_await asio::this_coro::executor, duration);
  co_await timer.async_wait(asio::use_awaitable);
}

}  // namespace

TEST_CASE("call: a reply and an error reply from Redis", "[upstream][call]") {
  corral::test::RedisServerProcess redis;
  asio::io_context io;
  auto connection = connect(io, redis.port(), corral::config::Duration(2000));
  CallResult set, get, error;
  run(io, [&]() -> asio::awaitable<void> {
    const std::string_view set_argv[] = {"SET", "call:key", "value"};
    const std::string_view get_argv[] = {"GET", "call:key"};
    set = co_await call(*connection, set_argv);
    get = co_await call(*connection, get_argv);
    error = co_await call(*connection, std::string_view("*1\r\n$9\r\nNOSUCHCMD\r\n"));
    connection->close();
  });
  REQUIRE(set.ok());
  CHECK(set.reply == "+OK\r\n");
  REQUIRE(get.ok());
  CHECK(get.reply == "$5\r\nvalue\r\n");
  CHECK_FALSE(get.redis_error());
  REQUIRE(error.ok());  // Redis answered: an error reply is a reply
  CHECK(error.redis_error());
  CHECK(error.reply.starts_with("-ERR"));
}

TEST_CASE("call: a script runs by EVALSHA, and again after SCRIPT FLUSH", "[upstream][call]") {
  corral::test::RedisServerProcess redis;
  asio::io_context io;
  auto connection = connect(io, redis.port(), corral::config::Duration(2000));
  static const corral::upstream::Script kEcho("return ARGV[1] .. KEYS[1]");
  CallResult first, second, flushed, after_flush;
  run(io, [&]() -> asio::awaitable<void> {
    const std::string_view keys[] = {"k"};
    const std::string_view args[] = {"v"};
    const std::string_view flush[] = {"SCRIPT", "FLUSH"};
    first = co_await call(*connection, kEcho, keys, args);
    second = co_await call(*connection, kEcho, keys, args);  // EVALSHA: the digest is known
    flushed = co_await call(*connection, flush);
    after_flush = co_await call(*connection, kEcho, keys, args);  // NOSCRIPT, then EVAL
    connection->close();
  });
  REQUIRE(first.ok());
  CHECK(first.reply == "$2\r\nvk\r\n");
  REQUIRE(second.ok());
  CHECK(second.reply == "$2\r\nvk\r\n");
  REQUIRE(flushed.ok());
  REQUIRE(after_flush.ok());
  CHECK(after_flush.reply == "$2\r\nvk\r\n");
}

TEST_CASE("call: no reply within the command timeout", "[upstream][call]") {
  corral::test::RedisServerProcess redis;
  asio::io_context io;
  auto pauser = connect(io, redis.port(), corral::config::Duration(2000));
  auto connection = connect(io, redis.port(), corral::config::Duration(200));
  CallResult pause, ping;
  const auto started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration waited{};
  run(io, [&]() -> asio::awaitable<void> {
    const std::string_view pause_argv[] = {"CLIENT", "PAUSE", "1500"};
    const std::string_view ping_argv[] = {"PING"};
    pause = co_await call(*pauser, pause_argv);
    ping = co_await call(*connection, ping_argv);
    waited = std::chrono::steady_clock::now() - started;
    pauser->close();
    connection->close();
  });
  REQUIRE(pause.ok());
  CHECK(ping.kind == CallError::timed_out);
  CHECK_FALSE(ping.ok());
  CHECK(waited < 1500ms);  // the timeout answered, not the end of the pause
}

TEST_CASE("call: the connection dies under a command", "[upstream][call]") {
  corral::test::RedisServerProcess redis;
  asio::io_context io;
  auto pauser = connect(io, redis.port(), corral::config::Duration(2000));
  auto connection = connect(io, redis.port(), corral::config::Duration(0));
  CallResult pause, ping, after;
  run(io, [&]() -> asio::awaitable<void> {
    const std::string_view pause_argv[] = {"CLIENT", "PAUSE", "5000"};
    const std::string_view ping_argv[] = {"PING"};
    pause = co_await call(*pauser, pause_argv);
    // The PING waits behind the pause; the server dies meanwhile.
    asio::co_spawn(
        co_await asio::this_coro::executor,
        [&]() -> asio::awaitable<void> {
          co_await sleep_for(200ms);
          redis.stop();
        },
        asio::detached);
    ping = co_await call(*connection, ping_argv);
    after = co_await call(*connection, ping_argv);
    pauser->close();
  });
  REQUIRE(pause.ok());
  CHECK(ping.kind == CallError::connection_lost);
  CHECK_FALSE(ping.error.empty());
  // A connection that does not reconnect takes nothing more.
  CHECK_FALSE(after.ok());
  CHECK(after.kind != CallError::connection_lost);
}
