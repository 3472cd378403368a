// An upstream that sends its last reply and hangs up in one TCP segment: the connection's read
// takes the socket as drained (no further edge will come), so its tick must find the hang-up.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "recording_target.hpp"
#include "upstream/connection.hpp"

namespace asio = boost::asio;
using corral::upstream::Connection;
using corral::upstream::ConnectionOptions;
using namespace std::chrono_literals;

namespace {
using Recorder = corral::upstream::test::RecordingTarget;
}  // namespace

TEST_CASE("an upstream's hang-up that came with its last reply is found by the tick",
          "[upstream]") {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
  asio::ip::tcp::socket server(io);
  acceptor.async_accept(server, [](const boost::system::error_code&) {});

  ConnectionOptions options;
  options.server = {"127.0.0.1", acceptor.local_endpoint().port()};
  options.reconnect = false;                                 // the first failure ends it: closed
  options.command_timeout = std::chrono::milliseconds(400);  // a tick every 100 ms
  auto connection = std::make_shared<Connection>(io.get_executor(), options, nullptr);
  connection->start();
  for (int i = 0; i < 40 && connection->state() != Connection::State::ready; ++i) {
    io.run_for(25ms);
  }
  REQUIRE(connection->state() == Connection::State::ready);

  auto replies = std::make_shared<Recorder>();
  REQUIRE(connection->send("*1\r\n$4\r\nPING\r\n", replies, 1));
  char request[64];
  std::size_t received = 0;
  server.async_read_some(asio::buffer(request),
                         [&](const boost::system::error_code&, std::size_t n) { received = n; });
  for (int i = 0; i < 40 && received == 0; ++i) io.run_for(25ms);
  REQUIRE(received > 0);
  // Corked, the reply waits in the kernel and the FIN of shutdown() rides on its segment.
  const int on = 1;
  REQUIRE(::setsockopt(server.native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on) == 0);
  asio::write(server, asio::buffer(std::string("+PONG\r\n")));
  server.shutdown(asio::ip::tcp::socket::shutdown_send);

  for (int i = 0; i < 80 && connection->state() == Connection::State::ready; ++i) {
    io.run_for(25ms);
  }
  CHECK(replies->log == std::vector<std::string>{"1 +PONG\r\n"});
  // Without the check the connection would look ready until the next command met a reset.
  CHECK(connection->state() != Connection::State::ready);
  connection->close();
  io.run_for(50ms);
}
