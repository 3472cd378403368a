// A connection that carries SYNC/PSYNC, against a scripted server socket: keep-alives pass on
// while the verdict is due; an error line ends the relay (replies are framed again); an
// acceptance makes every later byte raw, an error-looking one included.
#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
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
using RelayState = corral::upstream::Link::RelayState;
using namespace std::chrono_literals;

namespace {
constexpr std::string_view kPsync = "*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n";

using Recorder = corral::upstream::test::RecordingTarget;

// Every reply here is tag 0's: their bytes, run together.
std::string joined(const Recorder& recorder) {
  std::string all;
  for (const auto& entry : recorder.log) all += entry.substr(2);
  return all;
}

// A connection to a server socket the test writes to, with a PSYNC sent in relay mode.
struct Scripted {
  Scripted() : acceptor(io, {asio::ip::address_v4::loopback(), 0}), server(io) {
    acceptor.async_accept(server, [](const boost::system::error_code&) {});
    ConnectionOptions options;
    options.server = {"127.0.0.1", acceptor.local_endpoint().port()};
    options.reconnect = false;
    connection = std::make_shared<Connection>(io.get_executor(), options, nullptr);
    connection->start();
    run_until([this] { return connection->state() == Connection::State::ready; });
    REQUIRE(connection->state() == Connection::State::ready);
    connection->set_unsolicited_target(stream);
    REQUIRE(connection->start_raw_relay());
    REQUIRE(connection->send_untracked(kPsync));
    REQUIRE(receive().find("PSYNC") != std::string::npos);
  }
  ~Scripted() {
    connection->close();
    io.run_for(50ms);
  }
  void run_until(const std::function<bool()>& done) {
    for (int i = 0; i < 200 && !done(); ++i) io.run_for(10ms);
  }
  // A read left pending when nothing came fills a member, never a stack frame gone by then.
  std::string receive() {
    received = 0;
    server.async_read_some(asio::buffer(request), [this](const boost::system::error_code&,
                                                         std::size_t n) { received = n; });
    run_until([this] { return received > 0; });
    return std::string(request.data(), received);
  }
  // The server's bytes, then the event loop until the connection delivered `deliveries` in all.
  void answer(std::string_view bytes, std::size_t deliveries, const Recorder& to) {
    asio::write(server, asio::buffer(bytes));
    run_until([&] { return to.log.size() >= deliveries; });
  }

  asio::io_context io;
  asio::ip::tcp::acceptor acceptor;
  asio::ip::tcp::socket server;
  std::shared_ptr<Connection> connection;
  std::shared_ptr<Recorder> stream = std::make_shared<Recorder>();
  std::array<char, 256> request{};
  std::size_t received = 0;
};
}  // namespace

TEST_CASE("a refused PSYNC: its error ends the relay, and replies are framed again",
          "[upstream][replication]") {
  Scripted s;
  CHECK(s.connection->relay_state() == RelayState::awaiting_verdict);
  s.answer("\n", 1, *s.stream);
  CHECK(s.stream->log == std::vector<std::string>{"0 \n"});
  CHECK(s.connection->relay_state() == RelayState::awaiting_verdict);
  s.answer("-NOPERM this user has no permissions to run the 'psync' command\r\n", 2, *s.stream);
  CHECK(s.stream->log.back() ==
        "0 -NOPERM this user has no permissions to run the 'psync' command\r\n");
  CHECK(s.connection->relay_state() == RelayState::off);

  auto replies = std::make_shared<Recorder>();
  REQUIRE(s.connection->send("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", replies, 7));
  CHECK(s.receive().find("GET") != std::string::npos);
  s.answer("$1\r\nv\r\n", 1, *replies);
  CHECK(replies->log == std::vector<std::string>{"7 $1\r\nv\r\n"});
  CHECK(s.stream->log.size() == 2);  // the relay's target had its last delivery
  CHECK(s.connection->state() == Connection::State::ready);
}

TEST_CASE("an accepted PSYNC relays every later byte raw", "[upstream][replication]") {
  Scripted s;
  s.answer("\n\n", 1, *s.stream);
  CHECK(s.connection->relay_state() == RelayState::awaiting_verdict);
  // An RDB payload has no trailing CRLF, and may hold anything.
  const std::string stream = "+FULLRESYNC 8de1787b 0\r\n$6\r\n-ERR x*1\r\n$4\r\nPING\r\n";
  asio::write(s.server, asio::buffer(stream));
  s.run_until([&] { return joined(*s.stream).size() >= 2 + stream.size(); });
  CHECK(joined(*s.stream) == "\n\n" + stream);
  CHECK(s.connection->relay_state() == RelayState::relaying);
  CHECK(s.connection->send_untracked("REPLCONF ACK 0\r\n"));
  CHECK(s.receive() == "REPLCONF ACK 0\r\n");
}
