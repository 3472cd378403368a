// Tests of the slowlog's pure parts: Redis's argument rendering, the bound on what is shown, the
// newest-first merge across threads, run-time settings, RESET, and the phase histograms.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "slowlog/argv_head.hpp"
#include "slowlog/redaction.hpp"
#include "slowlog/slow_log.hpp"

using namespace corral::slowlog;

namespace {
std::vector<std::string> rendered(std::vector<std::string_view> argv) {
  ArgvHead head;
  head.capture(argv);
  return head.redis_argv();
}

SlowEntry entry_for(std::string name) {
  SlowEntry entry;
  entry.argv = {std::move(name)};
  return entry;
}
}  // namespace

TEST_CASE("short arguments are kept as they are", "[slowlog]") {
  CHECK(rendered({"GET", "k"}) == std::vector<std::string>{"GET", "k"});
  CHECK(rendered({"PING"}) == std::vector<std::string>{"PING"});
}

TEST_CASE("long arguments and extra arguments are cut as Redis cuts them", "[slowlog]") {
  // slowlogCreateEntry: 128 bytes per argument, 32 elements, the last "... (N more arguments)".
  const std::string key(129, 'k');
  const auto cut = rendered({"SADD", key, "v"});
  REQUIRE(cut.size() == 3);
  CHECK(cut[1] == std::string(128, 'k') + "... (1 more bytes)");
  CHECK(cut[2] == "v");
  std::vector<std::string> words = {"SADD", "set"};
  for (int i = 3; i <= 33; ++i) words.push_back(std::to_string(i));
  const std::vector<std::string_view> argv(words.begin(), words.end());
  const auto many = rendered(argv);
  REQUIRE(many.size() == 32);
  CHECK(many[30] == "31");
  CHECK(many[31] == "... (2 more arguments)");
  words.pop_back();  // 32 arguments: all shown
  const std::vector<std::string_view> exact(words.begin(), words.end());
  const auto all = rendered(exact);
  REQUIRE(all.size() == 32);
  CHECK(all[31] == "32");
}

namespace {
std::string multibulk(const std::vector<std::string>& words) {
  std::string out = "*" + std::to_string(words.size()) + "\r\n";
  for (const auto& w : words) out += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
  return out;
}
}  // namespace

TEST_CASE("arguments are read in place until kept, then from the copy", "[slowlog]") {
  std::string buffer = multibulk({"SET", "key:1", "value"});
  ArgvHead head;
  head.refer(buffer);
  CHECK(head.redis_argv() == std::vector<std::string>{"SET", "key:1", "value"});
  head.keep();
  // The session reuses its input buffer once every pending request's head is kept.
  buffer.replace(0, buffer.size(), buffer.size(), 'x');
  CHECK(head.redis_argv() == std::vector<std::string>{"SET", "key:1", "value"});
  head.keep();  // a second call copies nothing again
  CHECK(head.redis_argv() == std::vector<std::string>{"SET", "key:1", "value"});
}

TEST_CASE("a slot that referred to nothing keeps nothing", "[slowlog]") {
  // A protocol error's slot: keep() once copied from a null pointer (UBSan under CI's ASan run).
  ArgvHead head;
  head.keep();
  CHECK(head.redis_argv().empty());
}

TEST_CASE("a kept request larger than the inline room is cut as one read in place", "[slowlog]") {
  std::vector<std::string> words = {"MSET"};
  for (int i = 0; i < 40; ++i) words.push_back(std::string(200, static_cast<char>('a' + i % 26)));
  std::string buffer = multibulk(words);
  ArgvHead head;
  head.refer(buffer);
  const auto in_place = head.redis_argv();
  head.keep();
  buffer.assign(buffer.size(), 'x');
  CHECK(head.redis_argv() == in_place);
  REQUIRE(in_place.size() == 32);
  CHECK(in_place[1] == std::string(128, 'a') + "... (72 more bytes)");
  CHECK(in_place[31] == "... (10 more arguments)");
}

TEST_CASE("secrets are redacted as Redis redacts them", "[slowlog]") {
  using V = std::vector<std::string>;
  const std::string r(kRedacted);
  CHECK(rendered({"AUTH", "pw"}) == V{"AUTH", r});
  CHECK(rendered({"auth", "user", "pw"}) == V{"auth", r, r});
  CHECK(rendered({"HELLO", "3", "AUTH", "u", "pw", "SETNAME", "n"}) ==
        V{"HELLO", "3", "AUTH", r, r, "SETNAME", "n"});
  // A client named "auth": the name is SETNAME's value, and the AUTH after it is the option.
  CHECK(rendered({"HELLO", "3", "SETNAME", "AUTH", "AUTH", "u", "pw"}) ==
        V{"HELLO", "3", "SETNAME", "AUTH", "AUTH", r, r});
  CHECK(rendered({"MIGRATE", "h", "1", "k", "0", "5000", "AUTH2", "u", "pw", "KEYS", "auth"}) ==
        V{"MIGRATE", "h", "1", "k", "0", "5000", "AUTH2", r, r, "KEYS", "auth"});
  CHECK(rendered({"MIGRATE", "h", "1", "k", "0", "5000", "auth", "pw"}) ==
        V{"MIGRATE", "h", "1", "k", "0", "5000", "auth", r});
  CHECK(rendered({"ACL", "SETUSER", "bob", "on", ">pw"}) == V{"ACL", "SETUSER", r, r, r});
  CHECK(rendered({"config", "set", "maxmemory", "1mb", "MasterAuth", "pw"}) ==
        V{"config", "set", "maxmemory", "1mb", "MasterAuth", r});
  CHECK(rendered({"CONFIG", "GET", "requirepass"}) == V{"CONFIG", "GET", "requirepass"});
  // Kept as it came, then shown: redacted all the same.
  std::string buffer = "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n";
  ArgvHead head;
  head.refer(buffer);
  head.keep();
  CHECK(head.redis_argv() == V{"AUTH", r});
}

TEST_CASE("the log shows the newest max_len entries of all threads", "[slowlog]") {
  SlowLog log(2, 3, 0);
  for (int i = 0; i < 5; ++i) log.record(0, entry_for("a" + std::to_string(i)));
  log.record(1, entry_for("b0"));
  // Redis's one list of max_len: each thread keeps max_len, the view the newest max_len.
  CHECK(log.size() == 3);
  const auto all = log.newest(100);
  REQUIRE(all.size() == 3);
  // Newest first across both threads, by the process-wide id.
  CHECK(all[0].argv[0] == "b0");
  CHECK(all[1].argv[0] == "a4");
  CHECK(all[2].argv[0] == "a3");
  CHECK(all[0].id > all[1].id);
  CHECK(log.newest(2).size() == 2);
}

TEST_CASE("threshold and max_len change at run time, as CONFIG SET changes Redis's", "[slowlog]") {
  using std::chrono::microseconds;
  SlowLog log(1, 10, 10'000);
  CHECK_FALSE(log.records(microseconds(9'999)));
  CHECK(log.records(microseconds(10'000)));
  log.set_threshold_us(0);
  CHECK(log.records(microseconds(0)));
  log.set_threshold_us(-1);  // Redis: a negative slowlog-log-slower-than turns the log off
  CHECK_FALSE(log.records(std::chrono::hours(1)));
  for (int i = 0; i < 10; ++i) log.record(0, entry_for("c" + std::to_string(i)));
  log.set_max_len(1);
  CHECK(log.size() == 1);
  CHECK(log.newest(10)[0].argv[0] == "c9");
  log.set_max_len(0);
  log.record(0, entry_for("gone"));
  CHECK(log.size() == 0);
  log.set_max_len(1'000'000'000);
  CHECK(log.max_len() == kMaxLenLimit);
}

TEST_CASE("reset empties the rings but not the cumulative histograms", "[slowlog]") {
  SlowLog log(1, 8, 0);
  SlowEntry slow = entry_for("GET");
  slow.phases[Phase::origin] = 300'000;  // 0.3 s: the 0.5 s bucket
  slow.phases[Phase::queued] = 50;       // 50 us: the first bucket
  log.record(0, slow);
  log.reset();
  CHECK(log.size() == 0);
  CHECK(log.newest(10).empty());
  const auto& h = log.histograms();
  CHECK(h.recorded.load() == 1);
  const auto origin = static_cast<std::size_t>(Phase::origin);
  CHECK(h.sum_us[origin].load() == 300'000);
  CHECK(h.buckets[origin][10].load() == 1);  // le 0.5
  CHECK(h.buckets[static_cast<std::size_t>(Phase::queued)][0].load() == 1);
}
