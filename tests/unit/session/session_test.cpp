// The session layer alone, against the trivial MemoryHandler: replies in request order however
// they complete, the pipeline and output bounds, protocol errors, drain-and-retry and QUIT.
#include <utility>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "../loopback_client.hpp"
#include "config/settings.hpp"
#include "memory_handler.hpp"
#include "running_server.hpp"

namespace {

using corral::test::connect_loopback;
using corral::test::MemoryHandler;
using corral::test::RunningServer;

void send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    REQUIRE(n > 0);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Reads until `expected` bytes arrived or the peer closed (or two seconds passed).
std::string receive(int fd, std::size_t expected) {
  std::string got;
  char buffer[65536];
  while (got.size() < expected) {
    const auto n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  return got;
}

// True when the peer closed the connection (a read returns 0 or an error other than a timeout).
bool closed_by_peer(int fd) {
  char byte;
  return ::recv(fd, &byte, 1, 0) == 0;
}

}  // namespace

TEST_CASE("replies leave in request order however they complete") {
  RunningServer server;
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  // The first reply completes last: every later one must wait for it.
  send_all(fd,
           "*3\r\n$5\r\nLATER\r\n$2\r\n50\r\n$1\r\na\r\n"
           "*3\r\n$5\r\nLATER\r\n$1\r\n0\r\n$1\r\nb\r\n"
           "PING\r\n"
           "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
           "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
  const std::string expected = "$1\r\na\r\n$1\r\nb\r\n+PONG\r\n+OK\r\n$1\r\nv\r\n";
  CHECK(receive(fd, expected.size()) == expected);
  ::close(fd);
}

TEST_CASE("a deep pipeline arriving in one write is answered completely") {
  RunningServer server;
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  std::string requests;
  std::string expected;
  for (int i = 0; i < 20000; ++i) {
    requests += "*1\r\n$4\r\nPING\r\n";
    expected += "+PONG\r\n";
  }
  std::thread writer([&] { send_all(fd, requests); });
  CHECK(receive(fd, expected.size()) == expected);
  writer.join();
  ::close(fd);
}

TEST_CASE("the requests of one read share one clock reading; the next read takes a new one") {
  RunningServer server;
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  // Each CLOCK spins until the steady clock moves, so separate readings would differ.
  constexpr std::size_t kReply = 27;  // "$20\r\n" + 20 digits + "\r\n"
  send_all(fd, "CLOCK\r\nCLOCK\r\nCLOCK\r\n");
  const std::string batch = receive(fd, 3 * kReply);
  REQUIRE(batch.size() == 3 * kReply);
  CHECK(batch.substr(0, kReply) == batch.substr(kReply, kReply));
  CHECK(batch.substr(0, kReply) == batch.substr(2 * kReply, kReply));
  send_all(fd, "CLOCK\r\n");
  const std::string later = receive(fd, kReply);
  REQUIRE(later.size() == kReply);
  CHECK(later > batch.substr(0, kReply));  // same width: text order is numeric order
  ::close(fd);
}

TEST_CASE("a request that needs earlier replies first is retried after they arrive") {
  RunningServer server;
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  send_all(fd,
           "*3\r\n$5\r\nLATER\r\n$2\r\n30\r\n$1\r\na\r\n"
           "*2\r\n$10\r\nAFTERDRAIN\r\n$1\r\nb\r\n"
           "PING\r\n");
  const std::string expected = "$1\r\na\r\n$1\r\nb\r\n+PONG\r\n";
  CHECK(receive(fd, expected.size()) == expected);
  CHECK(server.handler().drain_retries >= 1);
  ::close(fd);
}

TEST_CASE("a protocol error is answered, then the connection is closed") {
  RunningServer server;
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  send_all(fd, "PING\r\n*1\r\n$x\r\n");
  const auto got = receive(fd, 1 << 20);
  CHECK(got.rfind("+PONG\r\n-ERR Protocol error", 0) == 0);
  ::close(fd);
}

TEST_CASE("QUIT answers OK and closes; later requests are not answered") {
  RunningServer server;
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  send_all(fd, "PING\r\nQUIT\r\nPING\r\n");
  CHECK(receive(fd, 1 << 20) == "+PONG\r\n+OK\r\n");
  ::close(fd);
}

TEST_CASE("a client that reads gets every reply, however far past max_output_buffer") {
  // The slow-reader clock does not run while every held reply waits behind an earlier one: the
  // client had nothing to read for 1.5 s, three times the timeout. (The timeout stays well above
  // a loaded machine's scheduling gaps: once the replies flow, this client reads them as fast as
  // its thread runs, and a 50 ms timeout cut it on a busy CI machine.)
  RunningServer server([](corral::config::Settings& settings) {
    settings.client.max_output_buffer = 64 * 1024;
    settings.client.slow_reader_timeout = std::chrono::milliseconds(500);
  });
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  // The first reply comes after 1.5 s by design: the loopback client's 2 s read deadline left a
  // loaded machine half a second, and it ran out (the test read nothing).
  const timeval deadline{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
  // Parked replies count too: a slow first reply holds 200 KB of later ones back; Corral stops
  // reading the client's requests meanwhile instead of cutting it.
  std::string requests = "*3\r\n$5\r\nLATER\r\n$4\r\n1500\r\n$1\r\na\r\n";
  for (int i = 0; i < 4; ++i) requests += "*2\r\n$3\r\nBIG\r\n$5\r\n50000\r\n";
  requests += "PING\r\n";
  send_all(fd, requests);
  const std::size_t expected = 7 + 4 * (8 + 50000 + 2) + 7;  // $1 a, 4 x $50000, +PONG
  const auto got = receive(fd, expected);
  CHECK(got.size() == expected);
  CHECK(got.ends_with("+PONG\r\n"));
  ::close(fd);
}

TEST_CASE("a client over max_output_buffer that reads nothing is cut after slow_reader_timeout") {
  RunningServer server([](corral::config::Settings& settings) {
    settings.client.max_output_buffer = 64 * 1024;
    settings.client.slow_reader_timeout = std::chrono::milliseconds(100);
  });
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  // 40 MB of replies: more than the loopback socket buffers hold, so Corral's output stays full.
  std::string requests;
  for (int i = 0; i < 40; ++i) requests += "*2\r\n$3\r\nBIG\r\n$7\r\n1000000\r\n";
  send_all(fd, requests);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // under test: not reading
  const auto got = receive(fd, 64u << 20);
  CHECK(got.size() < 40u * 1000000);
  ::close(fd);

  // A client under the cap is served in full.
  const int small = connect_loopback(server.port());
  REQUIRE(small >= 0);
  send_all(small, "*2\r\n$3\r\nBIG\r\n$4\r\n1000\r\n");
  CHECK(receive(small, 1009).size() == 1009);  // "$1000\r\n" + 1000 bytes + "\r\n"
  ::close(small);
}

TEST_CASE("max_pipeline bounds requests in flight without losing any") {
  RunningServer server(
      [](corral::config::Settings& settings) { settings.client.max_pipeline = 4; });
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  std::string requests;
  std::string expected;
  for (int i = 0; i < 50; ++i) {
    requests += "*3\r\n$5\r\nLATER\r\n$1\r\n1\r\n$1\r\n" + std::to_string(i % 10) + "\r\n";
    expected += "$1\r\n" + std::to_string(i % 10) + "\r\n";
  }
  send_all(fd, requests);
  CHECK(receive(fd, expected.size()) == expected);
  ::close(fd);
}

TEST_CASE("sessions open and end through the handler; clients are counted") {
  RunningServer server;
  const int first = connect_loopback(server.port());
  const int second = connect_loopback(server.port());
  send_all(first, "PING\r\n");
  send_all(second, "PING\r\n");
  CHECK(receive(first, 7) == "+PONG\r\n");
  CHECK(receive(second, 7) == "+PONG\r\n");
  CHECK(server.info().connected_clients.load() == 2);
  ::close(first);
  ::close(second);
  for (int i = 0; i < 200 && server.info().connected_clients.load() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(server.info().connected_clients.load() == 0);
  CHECK(server.handler().sessions_opened == 2);
  CHECK(server.handler().sessions_ended == 2);
}

TEST_CASE("clients over max_clients are refused with Redis's error") {
  RunningServer server([](corral::config::Settings& settings) { settings.client.max_clients = 1; });
  const int first = connect_loopback(server.port());
  send_all(first, "PING\r\n");
  REQUIRE(receive(first, 7) == "+PONG\r\n");
  const int second = connect_loopback(server.port());
  CHECK(receive(second, 1 << 20) == "-ERR max number of clients reached\r\n");
  CHECK(closed_by_peer(second));
  ::close(first);
  ::close(second);
}

TEST_CASE("a drain answers what was read, then closes; new clients are refused") {
  RunningServer server;
  const auto port = server.port();
  const int fd = connect_loopback(port);
  REQUIRE(fd >= 0);
  // Still in progress when the drain begins: answered all the same, in order.
  send_all(fd, "*3\r\n$5\r\nLATER\r\n$3\r\n300\r\n$1\r\na\r\nPING\r\n");
  const int idle = connect_loopback(port);
  REQUIRE(idle >= 0);
  for (int i = 0; i < 200 && server.info().connected_clients.load() != 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(server.info().connected_clients.load() == 2);
  server.server().drain();
  const std::string expected = "$1\r\na\r\n+PONG\r\n";
  CHECK(receive(fd, expected.size()) == expected);
  CHECK(closed_by_peer(fd));
  CHECK(closed_by_peer(idle));  // nothing pending: closed at once
  CHECK(server.info().draining.load());
  CHECK(connect_loopback(port) < 0);
  CHECK(server.wait_served(std::chrono::seconds(5)));
  ::close(fd);
  ::close(idle);
}

TEST_CASE("a drain ends at shutdown_timeout even if a reply never comes") {
  RunningServer server([](corral::config::Settings& settings) {
    settings.shutdown_timeout = std::chrono::milliseconds(200);
  });
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  send_all(fd, "*3\r\n$5\r\nLATER\r\n$5\r\n60000\r\n$1\r\na\r\n");
  for (int i = 0; i < 200 && server.info().connected_clients.load() != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  server.server().drain();
  CHECK(server.wait_served(std::chrono::seconds(5)));
  ::close(fd);
}

TEST_CASE("relay mode: after the earlier replies, raw bytes pass both ways unparsed") {
  RunningServer server;
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  // What follows RELAY in the same write is no request: not even a valid one.
  send_all(fd, "LATER 50 a\r\nRELAY\r\n*9\r\n$100\r\nno crlf");
  const std::string first = "$1\r\na\r\n*9\r\n$100\r\nno crlf";
  CHECK(receive(fd, first.size()) == first);
  send_all(fd, std::string("\n\n\0PING\r\n", 9));
  CHECK(receive(fd, 9) == std::string("\n\n\0PING\r\n", 9));
  ::close(fd);
}

TEST_CASE("relay mode refused: the bytes sent behind it wait, then are requests again") {
  RunningServer server;
  const int fd = connect_loopback(server.port());
  REQUIRE(fd >= 0);
  // Relayed, the PINGs would come back as they are; as requests, each is answered.
  send_all(fd, "RELAY REFUSED\r\nPING\r\nPING\r\n");
  const std::string replies = "\n-ERR relay refused\r\n+PONG\r\n+PONG\r\n";
  CHECK(receive(fd, replies.size()) == replies);
  send_all(fd, "PING\r\n");
  CHECK(receive(fd, 7) == "+PONG\r\n");
  ::close(fd);
}
