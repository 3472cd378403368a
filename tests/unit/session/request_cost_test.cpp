// What a request/response client costs the session per request: no heap allocation on the io
// thread (counted by replacing the global operator new in this test binary).
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>
#include <string_view>
#include <thread>

#include "../loopback_client.hpp"
#include "running_server.hpp"

#if !defined(__SANITIZE_ADDRESS__)

namespace {
std::atomic<bool> counting{false};
std::atomic<long> io_thread_allocations{0};
std::thread::id test_thread;
}  // namespace

void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed) && std::this_thread::get_id() != test_thread) {
    io_thread_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {
// One PING and its whole reply, with no allocation on this side.
bool ping(int fd) {
  constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";
  constexpr std::string_view kPong = "+PONG\r\n";
  if (::send(fd, kPing.data(), kPing.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(kPing.size())) {
    return false;
  }
  char reply[16];
  std::size_t got = 0;
  while (got < kPong.size()) {
    const auto n = ::recv(fd, reply + got, sizeof reply - got, 0);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return std::string_view(reply, got) == kPong;
}
}  // namespace

TEST_CASE("a request/response client costs the session no allocation per request") {
  corral::test::RunningServer server;
  const int fd = corral::test::connect_loopback(server.port());
  REQUIRE(fd >= 0);
  test_thread = std::this_thread::get_id();
  // Warm-up: the thread's caches (input blocks, reply slots, Asio's handler memory) fill here.
  for (int i = 0; i < 50; ++i) REQUIRE(ping(fd));
  constexpr int kRequests = 1000;
  int answered = 0;
  counting = true;
  for (int i = 0; i < kRequests; ++i) answered += ping(fd) ? 1 : 0;
  counting = false;
  ::close(fd);
  CHECK(answered == kRequests);
  // Before: a coroutine frame for every dispatch and two for every wait of the writer, about
  // three allocations per request. A few stray ones (a timer of the hang-up sweep) may fall in.
  CHECK(io_thread_allocations.load() < kRequests / 20);
}

#endif
