// A RESP3 upstream connection against a real redis-server: HELLO 3 in the handshake, replies in
// RESP3, and pushes (pub/sub confirmations and messages) routed to the unsolicited target while
// tracked commands still get their own replies in order.
#include <utility>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "recording_target.hpp"
#include "redis_server_process.hpp"
#include "resp/encoder.hpp"
#include "upstream/connection.hpp"
#include "upstream/server_version.hpp"

namespace asio = boost::asio;
using corral::upstream::CallbackTarget;
using corral::upstream::Connection;
using corral::upstream::ConnectionOptions;
using namespace std::chrono_literals;

namespace {

std::string command(std::initializer_list<std::string_view> words) {
  std::vector<std::string_view> argv(words);
  std::string out;
  corral::resp::append_command(out, argv);
  return out;
}

using Recorder = corral::upstream::test::RecordingTarget;

}  // namespace

TEST_CASE("RESP3 connection: pushes go to the unsolicited target, replies to commands",
          "[upstream][resp3]") {
  corral::test::RedisServerProcess redis;
  asio::io_context io;
  ConnectionOptions options;
  options.server = {"127.0.0.1", redis.port()};
  options.reconnect = false;
  options.protocol = 3;
  auto subscriber = std::make_shared<Connection>(io.get_executor(), options, nullptr);
  options.protocol = 2;
  auto publisher = std::make_shared<Connection>(io.get_executor(), options, nullptr);
  subscriber->start();
  publisher->start();

  auto replies = std::make_shared<Recorder>();
  auto pushes = std::make_shared<Recorder>();
  subscriber->set_unsolicited_target(pushes);
  REQUIRE(subscriber->send_untracked(command({"SUBSCRIBE", "ch"})));
  REQUIRE(subscriber->send(command({"HGETALL", "nohash"}), replies, 1));
  io.run_for(300ms);  // subscribed before anything is published
  bool published = false;
  REQUIRE(publisher->send(command({"PUBLISH", "ch", "hi"}),
                          CallbackTarget::make([&](std::string_view, bool) { published = true; }),
                          7));
  io.run_for(300ms);
  REQUIRE(subscriber->send(command({"PING"}), replies, 2));
  io.run_for(300ms);

  CHECK(published);
  CHECK(replies->log == std::vector<std::string>{"1 %0\r\n", "2 +PONG\r\n"});
  REQUIRE(pushes->log.size() == 2);
  CHECK(pushes->log[0] == "0 >3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
  CHECK(pushes->log[1] == "0 >3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n");
  CHECK(corral::upstream::known_server_version().starts_with("7."));

  // The connection dies: the push target hears of it (a subscribed client must not stall).
  subscriber->close();
  publisher->close();
  io.run_for(100ms);
  REQUIRE(pushes->log.size() == 3);
  CHECK(pushes->log[2].starts_with("0 failed"));
}

TEST_CASE("RESP3 connection that never comes up tells its push target", "[upstream][resp3]") {
  asio::io_context io;
  ConnectionOptions options;
  options.server = {"127.0.0.1", 1};  // nothing listens there
  options.reconnect = false;
  options.protocol = 3;
  auto connection = std::make_shared<Connection>(io.get_executor(), options, nullptr);
  auto pushes = std::make_shared<Recorder>();
  connection->set_unsolicited_target(pushes);
  REQUIRE(connection->send_untracked(command({"SUBSCRIBE", "ch"})));
  connection->start();
  io.run_for(500ms);
  REQUIRE(pushes->log.size() == 1);
  CHECK(pushes->log[0].starts_with("0 failed"));
}

// The connect failure reaches the push target only when a command's sender can hear of it no other
// way (an untracked one); it always learns that the connection ended.
TEST_CASE(
    "a connection that never comes up tells its push target the failure only for untracked "
    "commands",
    "[upstream][resp3]") {
  asio::io_context io;
  ConnectionOptions options;
  options.server = {"127.0.0.1", 1};  // nothing listens there
  options.reconnect = false;
  options.protocol = 3;
  auto connection = std::make_shared<Connection>(io.get_executor(), options, nullptr);
  auto pushes = std::make_shared<Recorder>();
  auto replies = std::make_shared<Recorder>();
  connection->set_unsolicited_target(pushes);
  SECTION("tracked commands only: their targets are told the failure, the push target the end") {
    REQUIRE(connection->send(command({"GET", "k"}), replies, 1));
    connection->start();
    io.run_for(500ms);
    CHECK(replies->log == std::vector<std::string>{"1 failed ERR upstream unavailable"});
    CHECK(pushes->log == std::vector<std::string>{"0 failed ERR upstream connection closed"});
  }
  SECTION("an untracked command among them: only the push target can tell its sender") {
    REQUIRE(connection->send_untracked(command({"SUBSCRIBE", "ch"})));
    REQUIRE(connection->send(command({"GET", "k"}), replies, 1));
    connection->start();
    io.run_for(500ms);
    CHECK(replies->log == std::vector<std::string>{"1 failed ERR upstream unavailable"});
    CHECK(pushes->log == std::vector<std::string>{"0 failed ERR upstream unavailable"});
  }
}
