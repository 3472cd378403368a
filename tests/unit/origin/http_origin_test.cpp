// HttpOrigin against a real HTTP server (tests/origin_server.py): reply mapping, failures and
// their texts, timeouts, keep-alive reuse, Connection: close, retries, the connection limit and
// its queue, headers, escaping, and destruction with fetches pending (run under ASan in CI).
#include <utility>

#include "origin/http_origin.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "origin_server_process.hpp"

namespace {

namespace asio = boost::asio;
using corral::cache::ManualClock;
using corral::cache::SystemClock;
using corral::config::HttpOriginSettings;
using corral::origin::FetchResult;
using corral::origin::HttpOrigin;
using corral::origin::Outcome;
using corral::test::OriginServerProcess;
using namespace std::chrono_literals;

struct Answer {
  int calls = 0;
  Outcome outcome = Outcome::failure;
  std::string reply;
  std::chrono::nanoseconds duration{0};
};

// One server for the whole binary: starting Python costs more than every test together.
OriginServerProcess& server() {
  static OriginServerProcess process;
  return process;
}

HttpOriginSettings settings(const std::string& path = "/features/{suffix}") {
  HttpOriginSettings s;
  s.url_template = server().base() + path;
  s.timeout = 2000ms;
  s.connect_timeout = 500ms;
  s.max_connections = 4;
  s.retries = 1;
  return s;
}

// The io_context runs on the test thread, as an io thread of Corral would.
class Runner {
 public:
  std::shared_ptr<Answer> start(corral::origin::Origin& origin, std::vector<std::string> argv) {
    auto answer = std::make_shared<Answer>();
    std::vector<std::string_view> views(argv.begin(), argv.end());
    origin.fetch(views, [answer](const FetchResult& r) {
      ++answer->calls;
      answer->outcome = r.outcome;
      answer->reply = std::string(r.reply);
      answer->duration = r.duration;
    });
    return answer;
  }
  // Runs until every answer arrived (or `limit` passed), then a little more to catch a second
  // call of any callback.
  void wait(const std::vector<std::shared_ptr<Answer>>& answers, std::chrono::seconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    auto all_done = [&] {
      for (const auto& a : answers)
        if (a->calls == 0) return false;
      return true;
    };
    while (!all_done() && std::chrono::steady_clock::now() < deadline) io.run_one_for(10ms);
    io.restart();
    io.run_for(20ms);
    io.restart();
    for (const auto& a : answers) REQUIRE(a->calls == 1);
  }
  Answer fetch(corral::origin::Origin& origin, std::vector<std::string> argv) {
    auto answer = start(origin, std::move(argv));
    wait({answer});
    return *answer;
  }
  void idle(std::chrono::milliseconds d) {
    io.restart();
    io.run_for(d);
    io.restart();
  }

  asio::io_context io;
};

std::string bulk(const std::string& value) {
  return "$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
}

TEST_CASE("200 is the value for GET, EXISTS, STRLEN and GETRANGE; 404 is nil") {
  server().reset();
  server().control(R"({"paths": {"/features/a": {"body": "hello world"},
                                 "/features/gone": {"status": 404, "body": "no such feature"}}})");
  Runner run;
  HttpOrigin origin(run.io.get_executor(), "feat:", settings(), SystemClock::instance());
  CHECK(origin.name() == "http");

  auto get = run.fetch(origin, {"GET", "feat:a"});
  CHECK(get.outcome == Outcome::value);
  CHECK(get.reply == bulk("hello world"));
  CHECK(run.fetch(origin, {"exists", "feat:a"}).reply == ":1\r\n");
  CHECK(run.fetch(origin, {"StrLen", "feat:a"}).reply == ":11\r\n");
  auto range = run.fetch(origin, {"GETRANGE", "feat:a", "-5", "-1"});
  CHECK(range.outcome == Outcome::value);
  CHECK(range.reply == bulk("world"));

  struct Row {
    std::vector<std::string> argv;
    std::string reply;
  };
  const Row missing[] = {{{"GET", "feat:gone"}, "$-1\r\n"},
                         {{"EXISTS", "feat:gone"}, ":0\r\n"},
                         {{"STRLEN", "feat:gone"}, ":0\r\n"},
                         {{"GETRANGE", "feat:gone", "0", "-1"}, "$0\r\n\r\n"}};
  for (const Row& row : missing) {
    INFO(row.argv[0]);
    auto answer = run.fetch(origin, row.argv);
    CHECK(answer.outcome == Outcome::nil);
    CHECK(answer.reply == row.reply);
  }
}

TEST_CASE("commands an http origin cannot serve are error replies, without a request") {
  server().reset();
  Runner run;
  HttpOrigin origin(run.io.get_executor(), "feat:", settings(), SystemClock::instance());
  auto hget = run.fetch(origin, {"HGET", "feat:a", "f"});
  CHECK(hget.outcome == Outcome::error_reply);
  CHECK(hget.reply.starts_with("-ERR corral: an http origin cannot answer 'HGET'"));
  auto range = run.fetch(origin, {"GETRANGE", "feat:a", "x", "1"});
  CHECK(range.outcome == Outcome::error_reply);
  CHECK(range.reply == "-ERR value is not an integer or out of range\r\n");
  CHECK(server().requests("/features/a") == 0);
}

TEST_CASE("other statuses are failures naming the URL and the status, never retried") {
  server().reset();
  server().control(R"({"paths": {"/features/down": {"status": 503, "body": "busy"},
                                 "/features/moved": {"status": 301}}})");
  Runner run;
  HttpOrigin origin(run.io.get_executor(), "feat:", settings(), SystemClock::instance());
  auto down = run.fetch(origin, {"GET", "feat:down"});
  CHECK(down.outcome == Outcome::failure);
  CHECK(down.reply == "ERR corral: origin " + server().base() + "/features/down answered HTTP 503");
  CHECK(server().requests("/features/down") == 1);
  CHECK(run.fetch(origin, {"GET", "feat:moved"}).reply.ends_with("answered HTTP 301"));
}

TEST_CASE("the callback never runs inside fetch(), and the duration is read from the clock") {
  server().reset();
  Runner run;
  ManualClock clock;
  HttpOrigin origin(run.io.get_executor(), "feat:", settings(), clock);
  auto answer = run.start(origin, {"GET", "feat:a"});
  CHECK(answer->calls == 0);
  clock.advance(7ms);
  run.wait({answer});
  CHECK(answer->outcome == Outcome::value);
  CHECK(answer->duration == 7ms);

  // Also for answers known at once (a refused command).
  auto refused = run.start(origin, {"HGET", "feat:a", "f"});
  CHECK(refused->calls == 0);
  run.wait({refused});
  CHECK(refused->duration == 0ms);
}

TEST_CASE("a slow answer times out and is not retried; a slow body within the timeout is fine") {
  server().reset();
  server().control(R"({"paths": {"/features/slow": {"delay_ms": 1500},
                                 "/features/trickle": {"body": "0123456789",
                                                       "body_delay_ms": 200},
                                 "/features/stuck": {"body": "0123456789",
                                                     "body_delay_ms": 1500}}})");
  Runner run;
  auto s = settings();
  s.timeout = 400ms;
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  const auto t0 = std::chrono::steady_clock::now();
  auto slow = run.fetch(origin, {"GET", "feat:slow"});
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(slow.outcome == Outcome::failure);
  CHECK(slow.reply == "ERR corral: origin timed out after 400ms");
  CHECK(took >= 350ms);
  CHECK(took < 1200ms);
  CHECK(slow.duration >= 350ms);
  CHECK(server().requests("/features/slow") == 1);

  auto trickle = run.fetch(origin, {"GET", "feat:trickle"});
  CHECK(trickle.outcome == Outcome::value);
  CHECK(trickle.reply == bulk("0123456789"));

  auto stuck = run.fetch(origin, {"GET", "feat:stuck"});
  CHECK(stuck.reply == "ERR corral: origin timed out after 400ms");
  // The connection that timed out is not reused: the next fetch still works.
  CHECK(run.fetch(origin, {"GET", "feat:trickle"}).outcome == Outcome::value);
}

TEST_CASE("a body over max_body fails; one at the limit is served") {
  server().reset();
  server().control(R"({"paths": {"/features/big": {"body_size": 1025},
                                 "/features/fits": {"body_size": 1024}}})");
  Runner run;
  auto s = settings();
  s.max_body = 1024;
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  auto big = run.fetch(origin, {"GET", "feat:big"});
  CHECK(big.outcome == Outcome::failure);
  CHECK(big.reply == "ERR corral: origin body over max_body (1kb)");
  CHECK(server().requests("/features/big") == 1);
  auto fits = run.fetch(origin, {"STRLEN", "feat:fits"});
  CHECK(fits.reply == ":1024\r\n");
}

TEST_CASE("a malformed response fails") {
  server().reset();
  server().control(R"({"paths": {"/features/junk": {"raw": "SPDY/9 what\r\n\r\n"}}})");
  Runner run;
  HttpOrigin origin(run.io.get_executor(), "feat:", settings(), SystemClock::instance());
  auto junk = run.fetch(origin, {"GET", "feat:junk"});
  CHECK(junk.outcome == Outcome::failure);
  CHECK(junk.reply.starts_with("ERR corral: origin " + server().base() +
                               "/features/junk sent a malformed response ("));
}

TEST_CASE("keep-alive connections are reused; Connection: close is honoured") {
  server().reset();
  server().control(R"({"paths": {"/features/c1": {"close": true},
                                 "/features/c2": {"close": true}}})");
  Runner run;
  HttpOrigin origin(run.io.get_executor(), "feat:", settings(), SystemClock::instance());
  const int before = server().connections();
  for (int i = 0; i < 20; ++i) {
    auto answer = run.fetch(origin, {"GET", "feat:k" + std::to_string(i)});
    REQUIRE(answer.outcome == Outcome::value);
  }
  CHECK(server().connections() - before == 2);  // ours, and the stats request

  const int before_close = server().connections();
  CHECK(run.fetch(origin, {"GET", "feat:c1"}).outcome == Outcome::value);
  CHECK(run.fetch(origin, {"GET", "feat:c2"}).outcome == Outcome::value);
  CHECK(run.fetch(origin, {"GET", "feat:k0"}).outcome == Outcome::value);
  // c1 rode the idle connection and closed it, c2 needed a new one and closed it too, k0 a
  // third; plus the stats request.
  CHECK(server().connections() - before_close == 3);
}

TEST_CASE("an idle connection the server closed is dropped, not reused") {
  server().reset();
  server().control(R"({"idle_timeout_ms": 150})");
  Runner run;
  auto s = settings();
  s.retries = 0;  // a reuse of the dead connection would fail
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  CHECK(run.fetch(origin, {"GET", "feat:a"}).outcome == Outcome::value);
  run.idle(400ms);
  CHECK(run.fetch(origin, {"GET", "feat:a"}).outcome == Outcome::value);
  CHECK(server().requests("/features/a") == 2);
}

TEST_CASE("a reset on a reused connection is retried; on a fresh one it is not") {
  server().reset();
  server().control(R"({"paths": {"/features/reset": {"reset": true}}})");
  Runner run;
  {
    HttpOrigin origin(run.io.get_executor(), "feat:", settings(), SystemClock::instance());
    auto fresh = run.fetch(origin, {"GET", "feat:reset"});
    CHECK(fresh.outcome == Outcome::failure);
    CHECK(fresh.reply.starts_with("ERR corral: origin " + server().base() + "/features/reset "));
    CHECK(server().requests("/features/reset") == 1);
  }
  {
    HttpOrigin origin(run.io.get_executor(), "feat:", settings(), SystemClock::instance());
    REQUIRE(run.fetch(origin, {"GET", "feat:a"}).outcome == Outcome::value);
    auto reused = run.fetch(origin, {"GET", "feat:reset"});
    CHECK(reused.outcome == Outcome::failure);
    // The first attempt rode the idle keep-alive connection; the retry a new one, which failed
    // too, and that was not retried again.
    CHECK(server().requests("/features/reset") == 3);
  }
  {
    auto s = settings();
    s.retries = 0;
    HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
    REQUIRE(run.fetch(origin, {"GET", "feat:a"}).outcome == Outcome::value);
    CHECK(run.fetch(origin, {"GET", "feat:reset"}).outcome == Outcome::failure);
    CHECK(server().requests("/features/reset") == 4);
  }
}

TEST_CASE("a refused connection fails with the address") {
  // A port that was free a moment ago and has no listener.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  const std::string port = std::to_string(ntohs(address.sin_port));

  Runner run;
  auto s = settings();
  s.url_template = "http://127.0.0.1:" + port + "/{key}";
  s.retries = 3;
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  auto refused = run.fetch(origin, {"GET", "feat:a"});
  CHECK(refused.outcome == Outcome::failure);
  CHECK(refused.reply ==
        "ERR corral: origin 127.0.0.1:" + port + " connect failed: Connection refused");
}

TEST_CASE("a connect that hangs fails after connect_timeout") {
  // A listener that never accepts, its backlog filled: further SYNs are dropped.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(listen(fd, 0) == 0);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(c, reinterpret_cast<sockaddr*>(&address), sizeof address);
    fillers.push_back(c);
  }
  const std::string port = std::to_string(ntohs(address.sin_port));

  Runner run;
  auto s = settings();
  s.url_template = "http://127.0.0.1:" + port + "/{key}";
  s.connect_timeout = 200ms;
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  auto hung = run.fetch(origin, {"GET", "feat:a"});
  CHECK(hung.outcome == Outcome::failure);
  CHECK(hung.reply == "ERR corral: origin 127.0.0.1:" + port + " connect timed out after 200ms");
  CHECK(hung.duration >= 150ms);
  CHECK(hung.duration < 1500ms);
  for (int c : fillers) close(c);
  close(fd);
}

TEST_CASE("a host name is resolved") {
  server().reset();
  Runner run;
  auto s = settings();
  s.url_template = "http://localhost:" + std::to_string(server().port()) + "/features/{suffix}";
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  auto answer = run.fetch(origin, {"GET", "feat:named"});
  CHECK(answer.outcome == Outcome::value);
  CHECK(answer.reply == bulk("value of /features/named"));
}

TEST_CASE("at most max_connections are open; more fetches queue, within a bound") {
  server().reset();
  server().control(R"({"default": {"delay_ms": 150}})");
  Runner run;
  auto s = settings();
  s.max_connections = 2;
  s.timeout = 5000ms;
  {
    HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
    const int before = server().connections();
    std::vector<std::shared_ptr<Answer>> answers;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 6; ++i)
      answers.push_back(run.start(origin, {"GET", "feat:q" + std::to_string(i)}));
    run.wait(answers);
    CHECK(std::chrono::steady_clock::now() - t0 >= 440ms);  // three rounds of two
    for (const auto& a : answers) CHECK(a->outcome == Outcome::value);
    CHECK(server().connections() - before == 3);  // two, and the stats request
  }

  server().control(R"({"default": {"delay_ms": 5}})");
  s.max_connections = 1;  // the queue holds 64 per connection
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  std::vector<std::shared_ptr<Answer>> answers;
  for (int i = 0; i < 70; ++i)
    answers.push_back(run.start(origin, {"GET", "feat:b" + std::to_string(i)}));
  run.wait(answers, 20s);
  int values = 0, full = 0;
  for (const auto& a : answers) {
    if (a->outcome == Outcome::value) ++values;
    if (a->reply == "ERR corral: origin queue full (64 fetches wait for 1 connections)") ++full;
  }
  CHECK(values == 65);
  CHECK(full == 5);
}

TEST_CASE("a queued fetch times out too") {
  server().reset();
  server().control(R"({"default": {"delay_ms": 600}})");
  Runner run;
  auto s = settings();
  s.max_connections = 1;
  s.timeout = 300ms;
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  auto first = run.start(origin, {"GET", "feat:one"});
  auto second = run.start(origin, {"GET", "feat:two"});
  run.wait({first, second});
  CHECK(first->reply == "ERR corral: origin timed out after 300ms");
  CHECK(second->reply == "ERR corral: origin timed out after 300ms");
  // Its deadline ran from fetch(), not from when a connection took it.
  CHECK(second->duration < 500ms);
}

TEST_CASE("Host, User-Agent and the configured headers are sent") {
  server().reset();
  Runner run;
  auto s = settings();
  s.headers = {{"X-Api-Key", "s3cret"}, {"Accept", "application/json"}};
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  REQUIRE(run.fetch(origin, {"GET", "feat:h"}).outcome == Outcome::value);
  const std::string stats = server().stats();
  const std::string host = "127.0.0.1:" + std::to_string(server().port());
  CHECK(stats.find(R"("host": ")" + host + "\"") != std::string::npos);
  CHECK(stats.find(R"("user-agent": "corral")") != std::string::npos);
  CHECK(stats.find(R"("x-api-key": "s3cret")") != std::string::npos);
  CHECK(stats.find(R"("accept": "application/json")") != std::string::npos);
}

TEST_CASE("keys are URL-escaped; {key} keeps the prefix, {suffix} drops it") {
  server().reset();
  Runner run;
  HttpOrigin by_suffix(run.io.get_executor(), "feat:", settings(), SystemClock::instance());
  auto answer = run.fetch(by_suffix, {"GET", "feat:a b/c?d=e#f"});
  CHECK(answer.reply == bulk("value of /features/a%20b%2Fc%3Fd%3De%23f"));
  HttpOrigin by_key(run.io.get_executor(), "feat:", settings("/k/{key}?x=1"),
                    SystemClock::instance());
  CHECK(run.fetch(by_key, {"GET", "feat:ü"}).reply == bulk("value of /k/feat%3A%C3%BC?x=1"));
}

TEST_CASE("a bad URL template fails every fetch with the reason") {
  Runner run;
  HttpOriginSettings s;
  s.url_template = "http://{key}/x";
  HttpOrigin origin(run.io.get_executor(), "feat:", s, SystemClock::instance());
  auto answer = run.fetch(origin, {"GET", "feat:a"});
  CHECK(answer.outcome == Outcome::failure);
  CHECK(answer.reply ==
        "ERR corral: origin URL template http://{key}/x: placeholders are only allowed in the "
        "path, not in the host");
}

TEST_CASE("destroying the origin fails each pending fetch exactly once") {
  server().reset();
  server().control(R"({"default": {"delay_ms": 300}})");
  Runner run;
  auto s = settings();
  s.max_connections = 1;
  auto origin =
      std::make_unique<HttpOrigin>(run.io.get_executor(), "feat:", s, SystemClock::instance());
  std::vector<std::shared_ptr<Answer>> answers;
  for (int i = 0; i < 3; ++i)  // one on the connection, two queued
    answers.push_back(run.start(*origin, {"GET", "feat:d" + std::to_string(i)}));
  run.io.run_for(50ms);
  run.io.restart();
  origin.reset();
  run.wait(answers);
  for (const auto& a : answers) {
    CHECK(a->outcome == Outcome::failure);
    CHECK(a->reply == "ERR corral: origin shut down");
  }
}

TEST_CASE("a callback may destroy the origin; idle connections close with it") {
  server().reset();
  Runner run;
  auto origin = std::make_unique<HttpOrigin>(run.io.get_executor(), "feat:", settings(),
                                             SystemClock::instance());
  int calls = 0;
  std::vector<std::string_view> argv{"GET", "feat:a"};
  origin->fetch(argv, [&](const FetchResult& r) {
    ++calls;
    CHECK(r.outcome == Outcome::value);
    origin.reset();
  });
  for (int i = 0; i < 500 && calls == 0; ++i) run.io.run_one_for(10ms);
  run.idle(50ms);
  CHECK(calls == 1);
  CHECK_FALSE(origin);
}

TEST_CASE("an origin destroyed with its io_context never run leaks nothing") {
  server().reset();
  auto io = std::make_unique<asio::io_context>();
  int calls = 0;
  {
    HttpOrigin origin(io->get_executor(), "feat:", settings(), SystemClock::instance());
    std::vector<std::string_view> argv{"GET", "feat:a"};
    origin.fetch(argv, [&](const FetchResult&) { ++calls; });
  }
  io.reset();  // pending handlers (and the failure callback) are destroyed, not run
  CHECK(calls == 0);
}

}  // namespace
