// ReadyRead: one recv per message on a request/response exchange (no EAGAIN read after each),
// a buffer asked for only when bytes are there, and the hang-up its drained guess can miss.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <array>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "upstream/ready_read.hpp"

namespace asio = boost::asio;
using boost::system::error_code;
using corral::upstream::ReadSpace;
using corral::upstream::ReadyRead;

namespace {

// Counts what ReadyRead asks of it: every recv that found nothing calls nothing_read().
struct CountingSpace final : ReadSpace {
  asio::mutable_buffer read_space() override {
    ++asked;
    return asio::buffer(bytes);
  }
  void nothing_read() override { ++empty_reads; }
  std::array<char, 4096> bytes{};
  int asked = 0;
  int empty_reads = 0;
};

// A connected pair of loopback sockets on one io_context.
struct SocketPair {
  asio::io_context io{1};
  asio::ip::tcp::socket reader{io};
  asio::ip::tcp::socket writer{io};
  SocketPair() {
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
    writer.connect(acceptor.local_endpoint());
    reader = acceptor.accept();
  }
};

}  // namespace

TEST_CASE("ReadyRead reads each message of a request/response exchange with one recv") {
  SocketPair pair;
  CountingSpace space;
  ReadyRead reader(space);
  constexpr int kMessages = 200;
  int received = 0;
  std::string last;
  asio::co_spawn(
      pair.io,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < kMessages; ++i) {
          const std::string message = "message " + std::to_string(i);
          // Sent once the read below waits, as a client's next request comes after its reply.
          asio::post(pair.io,
                     [&pair, message] { asio::write(pair.writer, asio::buffer(message)); });
          error_code ec;
          const auto n = co_await reader.async_read(pair.reader,
                                                    asio::redirect_error(asio::use_awaitable, ec));
          REQUIRE_FALSE(ec);
          last.assign(space.bytes.data(), n);
          REQUIRE(last == message);
          REQUIRE(reader.last_read_drained());
          ++received;
        }
      },
      asio::detached);
  pair.io.run();
  CHECK(received == kMessages);
  // Asio's own async_read_some tries each read at once and finds nothing (kMessages EAGAIN
  // reads); here only the first read tries, on the fresh socket, before any edge was seen.
  CHECK(space.empty_reads <= 1);
}

TEST_CASE("ReadyRead reads on at once after a read that filled its room") {
  SocketPair pair;
  CountingSpace space;
  ReadyRead reader(space);
  const std::string big(space.bytes.size() + 100, 'x');
  asio::write(pair.writer, asio::buffer(big));
  std::size_t total = 0;
  bool drained_after_first = true;
  asio::co_spawn(
      pair.io,
      [&]() -> asio::awaitable<void> {
        total += co_await reader.async_read(pair.reader, asio::use_awaitable);
        drained_after_first = reader.last_read_drained();
        total += co_await reader.async_read(pair.reader, asio::use_awaitable);
      },
      asio::detached);
  pair.io.run();
  CHECK_FALSE(drained_after_first);
  CHECK(total == big.size());
}

TEST_CASE("ReadyRead asks for a buffer only when bytes are there") {
  SocketPair pair;
  CountingSpace space;
  ReadyRead reader(space);
  std::size_t got = 0;
  asio::co_spawn(
      pair.io,
      [&]() -> asio::awaitable<void> {
        got = co_await reader.async_read(pair.reader, asio::use_awaitable);
      },
      asio::detached);
  pair.io.poll();  // the read starts, finds nothing and waits
  CHECK(space.asked == space.empty_reads);
  asio::write(pair.writer, asio::buffer(std::string("ping")));
  pair.io.run();
  CHECK(got == 4);
  CHECK(space.asked == space.empty_reads + 1);
}

TEST_CASE("peer_hung_up finds the hang-up that came with the last bytes") {
  SocketPair pair;
  CountingSpace space;
  ReadyRead reader(space);
  asio::write(pair.writer, asio::buffer(std::string("last words")));
  pair.writer.shutdown(asio::ip::tcp::socket::shutdown_send);
  std::size_t got = 0;
  asio::co_spawn(
      pair.io,
      [&]() -> asio::awaitable<void> {
        got = co_await reader.async_read(pair.reader, asio::use_awaitable);
      },
      asio::detached);
  pair.io.run();
  REQUIRE(got == 10);
  // The bytes and the FIN came in one wake-up: the read was short, so it took the socket as
  // drained, and no further edge will say otherwise.
  CHECK(reader.last_read_drained());
  CHECK(corral::upstream::peer_hung_up(pair.reader));
}

TEST_CASE("peer_hung_up is false for a quiet open connection") {
  SocketPair pair;
  CHECK_FALSE(corral::upstream::peer_hung_up(pair.reader));
}

TEST_CASE("ReadyRead ends with eof when the peer closes while it waits") {
  SocketPair pair;
  CountingSpace space;
  ReadyRead reader(space);
  error_code ec;
  asio::co_spawn(
      pair.io,
      [&]() -> asio::awaitable<void> {
        co_await reader.async_read(pair.reader, asio::redirect_error(asio::use_awaitable, ec));
      },
      asio::detached);
  pair.io.poll();
  pair.writer.close();
  pair.io.run();
  CHECK(ec == asio::error::eof);
}

TEST_CASE("peer_hung_up finds a reset that came with the last bytes") {
  SocketPair pair;
  asio::write(pair.writer, asio::buffer(std::string("last words")));
  pair.writer.set_option(asio::socket_base::linger(true, 0));
  pair.writer.close();  // with linger 0: a reset
  char bytes[32];
  CHECK(pair.reader.read_some(asio::buffer(bytes)) == 10);
  CHECK(corral::upstream::peer_hung_up(pair.reader));
}
