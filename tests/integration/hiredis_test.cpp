// hiredis (synchronous redisContext) against a running Corral on 127.0.0.1:$CORRAL_PORT: deep
// redisAppendCommand pipelines with every reply checked in order, binary and large values.
// Started by run_hiredis_test.py, which brings up redis-server and corral and sets CORRAL_PORT.
#include <hiredis/hiredis.h>

#include <catch2/catch.hpp>
#include <cstdarg>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

Context connect() {
  const char* port = std::getenv("CORRAL_PORT");
  REQUIRE(port != nullptr);
  timeval tv{10, 0};
  Context c(redisConnectWithTimeout("127.0.0.1", std::atoi(port), tv));
  REQUIRE(c != nullptr);
  INFO("connect: " << c->errstr);
  REQUIRE(c->err == 0);
  REQUIRE(redisSetTimeout(c.get(), tv) == REDIS_OK);
  return c;
}

Reply next_reply(redisContext* c) {
  void* raw = nullptr;
  const int rc = redisGetReply(c, &raw);
  INFO("redisGetReply: " << c->errstr);
  REQUIRE(rc == REDIS_OK);
  REQUIRE(raw != nullptr);
  return Reply(static_cast<redisReply*>(raw));
}

Reply command(redisContext* c, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  void* raw = redisvCommand(c, fmt, ap);
  va_end(ap);
  INFO("redisCommand: " << c->errstr);
  REQUIRE(raw != nullptr);
  return Reply(static_cast<redisReply*>(raw));
}

std::string str(const redisReply* r) { return std::string(r->str, r->len); }

std::string type_name(int type) {
  switch (type) {
    case REDIS_REPLY_STRING:
      return "string";
    case REDIS_REPLY_ARRAY:
      return "array";
    case REDIS_REPLY_INTEGER:
      return "integer";
    case REDIS_REPLY_NIL:
      return "nil";
    case REDIS_REPLY_STATUS:
      return "status";
    case REDIS_REPLY_ERROR:
      return "error";
    default:
      return "type " + std::to_string(type);
  }
}

std::string describe(const redisReply* r) {
  std::string d = type_name(r->type);
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
      r->type == REDIS_REPLY_ERROR) {
    d += " '" + str(r).substr(0, 80) + "'";
  } else if (r->type == REDIS_REPLY_INTEGER) {
    d += " " + std::to_string(r->integer);
  }
  return d;
}

// One expected reply: its type and, for strings/status/errors, the text (errors: a prefix).
struct Expect {
  int type;
  std::string text;
  long long integer = 0;
};

void check_reply(const redisReply* r, const Expect& e, std::size_t index) {
  INFO("reply " << index << ": got " << describe(r) << ", want " << type_name(e.type) << " '"
                << e.text.substr(0, 80) << "' " << e.integer);
  REQUIRE(r->type == e.type);
  switch (e.type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      REQUIRE(str(r) == e.text);
      break;
    case REDIS_REPLY_ERROR:
      REQUIRE(str(r).rfind(e.text, 0) == 0);
      break;
    case REDIS_REPLY_INTEGER:
      REQUIRE(r->integer == e.integer);
      break;
    default:
      break;
  }
}

std::string random_bytes(std::mt19937& rng, std::size_t n) {
  std::string s(n, '\0');
  for (char& ch : s) ch = static_cast<char>(rng() & 0xff);
  return s;
}

}  // namespace

TEST_CASE("10,000 pipelined commands come back in order", "[hiredis][pipeline]") {
  Context c = connect();
  std::mt19937 rng(42);
  std::vector<Expect> expects;
  long long counter = 0;
  long long list_len = 0;
  const int n = 10000;
  for (int i = 0; i < n; ++i) {
    const std::string key = "hr:k:" + std::to_string(i % 500);
    switch (i % 10) {
      case 0:
      case 1: {
        // Unique per command, binary: CR LF NUL and RESP look-alikes inside.
        std::string value = "v" + std::to_string(i) + "\r\n$5\r\n" + std::string(1, '\0') +
                            random_bytes(rng, rng() % 64);
        REQUIRE(redisAppendCommand(c.get(), "SET %s %b", key.c_str(), value.data(), value.size()) ==
                REDIS_OK);
        expects.push_back({REDIS_REPLY_STATUS, "OK"});
        REQUIRE(redisAppendCommand(c.get(), "GET %s", key.c_str()) == REDIS_OK);
        expects.push_back({REDIS_REPLY_STRING, value});
        ++i;
        break;
      }
      case 2:
        REQUIRE(redisAppendCommand(c.get(), "INCR hr:ctr") == REDIS_OK);
        expects.push_back({REDIS_REPLY_INTEGER, "", ++counter});
        break;
      case 3: {
        const std::string e = "echo-" + std::to_string(i);
        REQUIRE(redisAppendCommand(c.get(), "ECHO %s", e.c_str()) == REDIS_OK);
        expects.push_back({REDIS_REPLY_STRING, e});
        break;
      }
      case 4:
        REQUIRE(redisAppendCommand(c.get(), "GET hr:missing:%d", i) == REDIS_OK);
        expects.push_back({REDIS_REPLY_NIL, ""});
        break;
      case 5:
        REQUIRE(redisAppendCommand(c.get(), "RPUSH hr:list %d", i) == REDIS_OK);
        expects.push_back({REDIS_REPLY_INTEGER, "", ++list_len});
        break;
      case 6:
        REQUIRE(redisAppendCommand(c.get(), "PING") == REDIS_OK);
        expects.push_back({REDIS_REPLY_STATUS, "PONG"});
        break;
      case 7:
        if (i % 70 == 7) {
          REQUIRE(redisAppendCommand(c.get(), "NOSUCHCOMMAND %d", i) == REDIS_OK);
          expects.push_back({REDIS_REPLY_ERROR, "ERR unknown command"});
        } else {
          REQUIRE(redisAppendCommand(c.get(), "GET") == REDIS_OK);
          expects.push_back({REDIS_REPLY_ERROR, "ERR wrong number of arguments"});
        }
        break;
      case 8:
        // Field f(i/10 % 50) is new the first time round only: the first 500 commands.
        REQUIRE(redisAppendCommand(c.get(), "HSET hr:h f%d %d", (i / 10) % 50, i) == REDIS_OK);
        expects.push_back({REDIS_REPLY_INTEGER, "", i < 500 ? 1 : 0});
        break;
      default:
        REQUIRE(redisAppendCommand(c.get(), "EXISTS hr:ctr") == REDIS_OK);
        expects.push_back({REDIS_REPLY_INTEGER, "", 1});
        break;
    }
  }
  REQUIRE(expects.size() >= static_cast<std::size_t>(n) - 1);
  for (std::size_t i = 0; i < expects.size(); ++i) {
    Reply r = next_reply(c.get());
    check_reply(r.get(), expects[i], i);
  }
  Reply len = command(c.get(), "LLEN hr:list");
  REQUIRE(len->type == REDIS_REPLY_INTEGER);
  REQUIRE(len->integer == list_len);
  Reply hlen = command(c.get(), "HLEN hr:h");
  REQUIRE(hlen->type == REDIS_REPLY_INTEGER);
  REQUIRE(hlen->integer == 50);
}

TEST_CASE("large binary values round-trip", "[hiredis][big]") {
  Context c = connect();
  std::mt19937 rng(7);
  const std::vector<std::size_t> sizes = {0, 1, 511, 65536, 512 * 1024, 1024 * 1024 - 1};
  std::vector<std::string> values;
  for (std::size_t size : sizes) values.push_back(random_bytes(rng, size));
  for (std::size_t i = 0; i < values.size(); ++i) {
    REQUIRE(redisAppendCommand(c.get(), "SET hr:big:%d %b", static_cast<int>(i), values[i].data(),
                               values[i].size()) == REDIS_OK);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    REQUIRE(redisAppendCommand(c.get(), "GET hr:big:%d", static_cast<int>(i)) == REDIS_OK);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    Reply r = next_reply(c.get());
    check_reply(r.get(), {REDIS_REPLY_STATUS, "OK"}, i);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    Reply r = next_reply(c.get());
    INFO("GET of a " << sizes[i] << "-byte value");
    REQUIRE(r->type == REDIS_REPLY_STRING);
    REQUIRE(r->len == values[i].size());
    REQUIRE(str(r.get()) == values[i]);
  }
}

TEST_CASE("several contexts pipeline interleaved", "[hiredis]") {
  std::vector<Context> contexts;
  for (int i = 0; i < 8; ++i) contexts.push_back(connect());
  for (int round = 0; round < 5; ++round) {
    for (std::size_t ci = 0; ci < contexts.size(); ++ci) {
      for (int j = 0; j < 200; ++j) {
        REQUIRE(redisAppendCommand(contexts[ci].get(), "SET hr:c:%d:%d r%d", static_cast<int>(ci),
                                   j, round) == REDIS_OK);
        REQUIRE(redisAppendCommand(contexts[ci].get(), "GET hr:c:%d:%d", static_cast<int>(ci), j) ==
                REDIS_OK);
      }
    }
    // Read back in reverse order of the contexts.
    for (std::size_t ci = contexts.size(); ci-- > 0;) {
      const std::string want = "r" + std::to_string(round);
      for (int j = 0; j < 200; ++j) {
        Reply s = next_reply(contexts[ci].get());
        check_reply(s.get(), {REDIS_REPLY_STATUS, "OK"}, static_cast<std::size_t>(j));
        Reply g = next_reply(contexts[ci].get());
        check_reply(g.get(), {REDIS_REPLY_STRING, want}, static_cast<std::size_t>(j));
      }
    }
  }
}

TEST_CASE("MULTI/EXEC and SELECT through hiredis", "[hiredis]") {
  Context c = connect();
  REQUIRE(str(command(c.get(), "SELECT 5").get()) == "OK");
  REQUIRE(redisAppendCommand(c.get(), "MULTI") == REDIS_OK);
  REQUIRE(redisAppendCommand(c.get(), "SET hr:tx 10") == REDIS_OK);
  REQUIRE(redisAppendCommand(c.get(), "INCRBY hr:tx 5") == REDIS_OK);
  REQUIRE(redisAppendCommand(c.get(), "EXEC") == REDIS_OK);
  check_reply(next_reply(c.get()).get(), {REDIS_REPLY_STATUS, "OK"}, 0);
  check_reply(next_reply(c.get()).get(), {REDIS_REPLY_STATUS, "QUEUED"}, 1);
  check_reply(next_reply(c.get()).get(), {REDIS_REPLY_STATUS, "QUEUED"}, 2);
  Reply exec = next_reply(c.get());
  REQUIRE(exec->type == REDIS_REPLY_ARRAY);
  REQUIRE(exec->elements == 2);
  check_reply(exec->element[0], {REDIS_REPLY_STATUS, "OK"}, 0);
  check_reply(exec->element[1], {REDIS_REPLY_INTEGER, "", 15}, 1);
  Reply got = command(c.get(), "GET hr:tx");
  check_reply(got.get(), {REDIS_REPLY_STRING, "15"}, 0);
  Context other = connect();
  Reply none = command(other.get(), "GET hr:tx");
  REQUIRE(none->type == REDIS_REPLY_NIL);  // db 0 does not see db 5
}
