// The operator HTTP endpoint on a loopback port, driven by a plain POSIX client (receive timeouts
// turn a misbehaving server into a failed check instead of a hung test).
#include <utility>

#include "metrics/http_endpoint.hpp"

#include "../loopback_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <cctype>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "metrics/metrics.hpp"

namespace {

using corral::metrics::HttpEndpoint;
using corral::metrics::Metrics;
using namespace std::chrono_literals;

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

// One blocking loopback connection; every receive gives up after two seconds.
class Client {
 public:
  explicit Client(unsigned short port)
      : fd_(corral::test::connect_loopback(port)), connected_(fd_ >= 0) {}
  ~Client() {
    if (fd_ >= 0) close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }

  bool send_all(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  bool get(const std::string& target, const std::string& method = "GET") {
    return send_all(method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
  }

  // The next reply; nullopt when the connection closed or timed out first.
  std::optional<HttpReply> read_reply(bool head = false) {
    std::size_t end = 0;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return std::nullopt;
    }
    HttpReply reply = parse_head(buffer_.substr(0, end));
    buffer_.erase(0, end + 4);
    std::size_t length = head ? 0 : std::stoul(reply.headers["content-length"]);
    while (buffer_.size() < length) {
      if (!fill()) return std::nullopt;
    }
    reply.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return reply;
  }

  // True when the server closed the connection (rather than the wait timing out).
  bool closed_by_server() {
    char byte;
    ssize_t n = recv(fd_, &byte, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  bool fill() {
    char chunk[4096];
    ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  static HttpReply parse_head(const std::string& head) {
    HttpReply reply;
    std::size_t line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    REQUIRE(status_line.rfind("HTTP/1.1 ", 0) == 0);
    reply.status = std::stoi(status_line.substr(9, 3));
    while (line_end != std::string::npos) {
      std::size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      std::string line = head.substr(start, line_end - start);
      std::size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      reply.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    return reply;
  }

  int fd_;
  bool connected_ = false;
  std::string buffer_;
};

std::optional<HttpReply> fetch(unsigned short port, const std::string& target,
                               const std::string& method = "GET") {
  Client client(port);
  if (!client.connected() || !client.get(target, method)) return std::nullopt;
  return client.read_reply(method == "HEAD");
}

// An endpoint on 127.0.0.1:<ephemeral> served by its own io thread.
struct Fixture {
  explicit Fixture(HttpEndpoint::Limits limits = {})
      : metrics(1, 1, [](std::size_t) { return std::string("GET"); }),
        endpoint(
            io, {"127.0.0.1", 0}, metrics,
            [this] { return ready.load() ? std::string() : std::string("upstream unreachable"); },
            limits) {
    endpoint.start();
    thread = std::thread([this] {
      io.run();
      drained.set_value();
    });
  }
  ~Fixture() {
    endpoint.stop();
    if (!stopped_cleanly()) io.stop();
    thread.join();
  }
  // Whether io.run() returned by itself, i.e. stop() left no work behind.
  bool stopped_cleanly() {
    if (!done.valid()) return finished;
    finished = done.wait_for(5s) == std::future_status::ready;
    done = {};
    return finished;
  }

  boost::asio::io_context io;
  Metrics metrics;
  std::atomic<bool> ready{true};
  HttpEndpoint endpoint;
  std::promise<void> drained;
  std::future<void> done = drained.get_future();
  bool finished = false;
  std::thread thread;
};

}  // namespace

TEST_CASE("the endpoint serves /metrics, /healthz and /readyz", "[metrics][http]") {
  Fixture f;
  REQUIRE(f.endpoint.port() != 0);
  f.metrics.thread(0).command(0, corral::metrics::CommandResult::ok, 1ms);

  auto metrics = fetch(f.endpoint.port(), "/metrics");
  REQUIRE(metrics);
  CHECK(metrics->status == 200);
  CHECK(metrics->headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(metrics->body.find(R"(corral_commands_total{command="GET",result="ok"} 1)") !=
        std::string::npos);
  CHECK(metrics->body.find("corral_build_info{version=") != std::string::npos);

  auto with_query = fetch(f.endpoint.port(), "/metrics?name[]=x");
  REQUIRE(with_query);
  CHECK(with_query->status == 200);

  auto health = fetch(f.endpoint.port(), "/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(health->body == "ok");

  auto ready = fetch(f.endpoint.port(), "/readyz");
  REQUIRE(ready);
  CHECK(ready->status == 200);
  CHECK(ready->body == "ready");

  f.ready = false;
  auto unready = fetch(f.endpoint.port(), "/readyz");
  REQUIRE(unready);
  CHECK(unready->status == 503);
  CHECK(unready->body == "upstream unreachable");
  auto still_healthy = fetch(f.endpoint.port(), "/healthz");
  REQUIRE(still_healthy);
  CHECK(still_healthy->status == 200);
}

TEST_CASE("unknown paths get 404, other methods 405, HEAD no body", "[metrics][http]") {
  Fixture f;
  auto missing = fetch(f.endpoint.port(), "/nope");
  REQUIRE(missing);
  CHECK(missing->status == 404);

  auto post = fetch(f.endpoint.port(), "/metrics", "POST");
  REQUIRE(post);
  CHECK(post->status == 405);
  CHECK(post->headers["allow"] == "GET, HEAD");

  auto remove = fetch(f.endpoint.port(), "/healthz", "DELETE");
  REQUIRE(remove);
  CHECK(remove->status == 405);

  Client client(f.endpoint.port());
  REQUIRE(client.get("/healthz", "HEAD"));
  auto head = client.read_reply(/*head=*/true);
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->headers["content-length"] == "2");
  // No body follows: the next reply on the connection starts right away.
  REQUIRE(client.get("/nope"));
  auto next = client.read_reply();
  REQUIRE(next);
  CHECK(next->status == 404);
}

TEST_CASE("one connection carries many requests, pipelined too", "[metrics][http]") {
  Fixture f;
  Client client(f.endpoint.port());
  REQUIRE(client.connected());
  for (int i = 0; i < 3; ++i) {
    REQUIRE(client.get("/healthz"));
    auto reply = client.read_reply();
    REQUIRE(reply);
    CHECK(reply->status == 200);
  }
  REQUIRE(
      client.send_all("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::vector<int> statuses;
  while (auto reply = client.read_reply()) statuses.push_back(reply->status);
  CHECK(statuses == std::vector<int>{200, 404, 200});
  CHECK(client.closed_by_server());
}

TEST_CASE("malformed and oversized requests get a 4xx and a close", "[metrics][http]") {
  HttpEndpoint::Limits limits;
  limits.max_request = 1024;
  Fixture f(limits);

  Client garbage(f.endpoint.port());
  REQUIRE(garbage.send_all("NOT HTTP AT ALL\r\n\r\n"));
  auto bad = garbage.read_reply();
  REQUIRE(bad);
  CHECK(bad->status == 400);
  CHECK(garbage.closed_by_server());

  Client big(f.endpoint.port());
  REQUIRE(big.send_all("GET /metrics HTTP/1.1\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n"));
  auto too_big = big.read_reply();
  REQUIRE(too_big);
  CHECK(too_big->status == 431);
  CHECK(big.closed_by_server());

  Client body(f.endpoint.port());
  REQUIRE(body.send_all("GET /metrics HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"));
  auto too_long = body.read_reply();
  REQUIRE(too_long);
  CHECK(too_long->status == 413);
}

TEST_CASE("an idle connection is closed after the read timeout", "[metrics][http]") {
  HttpEndpoint::Limits limits;
  limits.read_timeout = 200ms;
  Fixture f(limits);
  Client idle(f.endpoint.port());
  REQUIRE(idle.connected());
  auto started = std::chrono::steady_clock::now();
  CHECK(idle.closed_by_server());
  CHECK(std::chrono::steady_clock::now() - started < 1900ms);

  Client slow(f.endpoint.port());
  REQUIRE(slow.send_all("GET /healthz HTTP/1.1\r\n"));  // never finishes its headers
  CHECK(slow.closed_by_server());
}

TEST_CASE("at the cap the longest-waiting connection makes room", "[metrics][http]") {
  HttpEndpoint::Limits limits;
  limits.max_connections = 2;
  Fixture f(limits);
  Client first(f.endpoint.port());
  Client second(f.endpoint.port());
  // A reply proves each connection was accepted and is counted; `first` then waits longest.
  for (Client* c : {&first, &second}) {
    REQUIRE(c->get("/healthz"));
    REQUIRE(c->read_reply());
  }
  auto reply = fetch(f.endpoint.port(), "/readyz");
  REQUIRE(reply);
  CHECK(reply->status == 200);
  CHECK(first.closed_by_server());
}

TEST_CASE("idle and half-sent requests cannot lock the probes out", "[metrics][http]") {
  // Issue 17 row 9: a full set of connections that never finish a request, then the probes.
  HttpEndpoint::Limits limits;
  limits.max_connections = 4;
  Fixture f(limits);
  std::vector<std::unique_ptr<Client>> stalled;
  for (int i = 0; i < 12; ++i) {
    stalled.push_back(std::make_unique<Client>(f.endpoint.port()));
    REQUIRE(stalled.back()->send_all("GET /metrics HTTP/1.1\r\nHost: x\r\n"));
    if (i % 3 != 2) continue;
    for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
      INFO(path << " after " << i + 1 << " stalled connections");
      auto reply = fetch(f.endpoint.port(), path);
      REQUIRE(reply);
      CHECK(reply->status == 200);
    }
  }
  CHECK(stalled.front()->closed_by_server());
}

TEST_CASE("stop closes the listener and open connections", "[metrics][http]") {
  Fixture f;
  const unsigned short port = f.endpoint.port();
  Client open(port);
  REQUIRE(open.get("/healthz"));
  REQUIRE(open.read_reply());

  f.endpoint.stop();
  CHECK(open.closed_by_server());
  // Nothing left pending: the io_context runs out of work by itself.
  CHECK(f.stopped_cleanly());
  Client refused(port);
  CHECK_FALSE(refused.connected());
  f.endpoint.stop();  // idempotent
}

TEST_CASE("start reports an address it cannot bind", "[metrics][http]") {
  Fixture f;
  boost::asio::io_context io;
  HttpEndpoint taken(io, {"127.0.0.1", f.endpoint.port()}, f.metrics, {});
  const std::string address = "127.0.0.1:" + std::to_string(f.endpoint.port());
  CHECK_THROWS_MATCHES(taken.start(), std::system_error,
                       Catch::Matchers::Predicate<std::system_error>(
                           [&](const std::system_error& e) {
                             return std::string(e.what()).find(address) != std::string::npos &&
                                    e.code() == std::errc::address_in_use;
                           },
                           "names the address and says it is in use"));

  HttpEndpoint nowhere(io, {"no-such-host.invalid", 9121}, f.metrics, {});
  CHECK_THROWS_AS(nowhere.start(), std::system_error);
}
