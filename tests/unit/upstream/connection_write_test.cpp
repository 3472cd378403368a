// What one flush of an upstream connection costs the event loop: a batch the socket takes whole
// leaves in the flush itself, with no completion handler queued behind the reactor (issue 18).
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>

#include "upstream/connection.hpp"

namespace asio = boost::asio;
using corral::upstream::Connection;
using corral::upstream::ConnectionOptions;
using namespace std::chrono_literals;

namespace {
class Ignorer final : public corral::upstream::ReplyTarget {
 public:
  void on_reply(std::uint64_t, std::string_view) override {}
  void on_failure(std::uint64_t, std::string_view) override {}
};
}  // namespace

TEST_CASE("a batch the socket takes whole costs one handler, the flush", "[upstream]") {
  asio::io_context io;
  // The peer lives on a reactor of its own, so that its readiness is no handler of `io`.
  asio::io_context peer_io;
  asio::ip::tcp::acceptor acceptor(peer_io, {asio::ip::address_v4::loopback(), 0});
  asio::ip::tcp::socket server(peer_io);
  acceptor.async_accept(server, [](const boost::system::error_code&) {});

  ConnectionOptions options;
  options.server = {"127.0.0.1", acceptor.local_endpoint().port()};
  options.reconnect = false;
  auto connection = std::make_shared<Connection>(io.get_executor(), options, nullptr);
  connection->start();
  for (int i = 0; i < 40 && (connection->state() != Connection::State::ready || !server.is_open());
       ++i) {
    io.run_for(20ms);
    peer_io.run_for(5ms);
  }
  REQUIRE(connection->state() == Connection::State::ready);
  REQUIRE(server.is_open());
  io.poll();  // whatever the connect left queued

  constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";
  auto target = std::make_shared<Ignorer>();
  for (std::uint64_t tag = 1; tag <= 3; ++tag) REQUIRE(connection->send(kPing, target, tag));
  // Each handler queued after the flush costs the loop another pass and another epoll_wait:
  // an asynchronous write queues its completion even when the send took it all (2 here).
  CHECK(io.poll() == 1);

  std::string received(3 * kPing.size(), '\0');
  REQUIRE(asio::read(server, asio::buffer(received)) == received.size());
  CHECK(received == std::string(kPing) + std::string(kPing) + std::string(kPing));
  connection->close();
  io.run_for(50ms);
}
