// MONITOR lines as Redis 7.0 writes them: time, database, address, quoted arguments with its
// escaping, secrets redacted; admin commands left out; watchers added and removed.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "proxy/local/monitor_feed.hpp"

using namespace corral::proxy;

namespace {
std::string line(std::vector<std::string_view> argv, int db = 0) {
  const auto when =
      std::chrono::system_clock::time_point(std::chrono::microseconds(1700000000000042));
  return monitor_line(when, db, "127.0.0.1:5000", argv);
}
}  // namespace

TEST_CASE("monitor lines: time with micros, database, address, quoted arguments") {
  CHECK(line({"SET", "k", "v"}, 3) ==
        "+1700000000.000042 [3 127.0.0.1:5000] \"SET\" \"k\" \"v\"\r\n");
  // Redis's sdscatrepr, checked against redis-server 7.0.15's MONITOR.
  CHECK(line({"SET", "k", std::string_view("a\"b\\c\n\r\t\x01\x7f\xff s\a\b", 15)}) ==
        "+1700000000.000042 [0 127.0.0.1:5000] \"SET\" \"k\" "
        "\"a\\\"b\\\\c\\n\\r\\t\\x01\\x7f\\xff s\\a\\b\"\r\n");
}

TEST_CASE("monitor lines: AUTH, HELLO AUTH and MIGRATE AUTH/AUTH2 secrets are redacted") {
  const std::string prefix = "+1700000000.000042 [0 127.0.0.1:5000] ";
  CHECK(line({"AUTH", "pw"}) == prefix + "\"AUTH\" \"(redacted)\"\r\n");
  CHECK(line({"auth", "u", "pw"}) == prefix + "\"auth\" \"(redacted)\" \"(redacted)\"\r\n");
  CHECK(line({"HELLO", "3", "AUTH", "u", "pw", "SETNAME", "n"}) ==
        prefix + "\"HELLO\" \"3\" \"AUTH\" \"(redacted)\" \"(redacted)\" \"SETNAME\" \"n\"\r\n");
  CHECK(line({"HELLO", "2"}) == prefix + "\"HELLO\" \"2\"\r\n");
  // A client named "auth" (SETNAME's value), then the AUTH option: the password stays hidden.
  CHECK(line({"HELLO", "3", "SETNAME", "auth", "AUTH", "u", "pw"}) ==
        prefix + "\"HELLO\" \"3\" \"SETNAME\" \"auth\" \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n");
  CHECK(line({"MIGRATE", "h", "1", "k", "0", "1", "AUTH", "p"}) ==
        prefix + "\"MIGRATE\" \"h\" \"1\" \"k\" \"0\" \"1\" \"AUTH\" \"(redacted)\"\r\n");
  CHECK(line({"MIGRATE", "h", "1", "", "0", "1", "AUTH2", "u", "p", "KEYS", "a"}) ==
        prefix +
            "\"MIGRATE\" \"h\" \"1\" \"\" \"0\" \"1\" \"AUTH2\" \"(redacted)\" \"(redacted)\" "
            "\"KEYS\" \"a\"\r\n");
}

TEST_CASE("the feed reaches every watcher until it is removed; admin commands never") {
  MonitorFeed feed;
  std::vector<std::string> a, b;
  CHECK_FALSE(feed.active());
  feed.add(1, [&](std::string l) { a.push_back(std::move(l)); });
  feed.add(2, [&](std::string l) { b.push_back(std::move(l)); });
  CHECK(feed.active());
  const CommandSpec get{"get", 2, kReadOnly, 1, 1, 1};
  const CommandSpec config{"config|get", -3, kAdmin, 0, 0, 0};
  const std::vector<std::string_view> argv{"GET", "k"};
  feed.feed(get, 0, "1.2.3.4:5", argv);
  feed.feed(config, 0, "1.2.3.4:5", std::vector<std::string_view>{"CONFIG", "GET", "x"});
  feed.remove(1);
  feed.feed(get, 2, "1.2.3.4:5", argv);
  REQUIRE(a.size() == 1);
  CHECK(a[0].ends_with(" [0 1.2.3.4:5] \"GET\" \"k\"\r\n"));
  REQUIRE(b.size() == 2);
  CHECK(b[1].ends_with(" [2 1.2.3.4:5] \"GET\" \"k\"\r\n"));
  feed.remove(2);
  CHECK_FALSE(feed.active());
}
