// Tests of the slowlog's pure parts: Redis's argument rendering, the per-thread rings' bound,
// the newest-first merge across threads, RESET, and the phase histograms.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "slowlog/argv_head.hpp"
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
  const std::string key(40, 'k');
  const auto out = rendered({"MSET", key, "v", "k2", "v2"});
  REQUIRE(out.size() == 4);
  CHECK(out[1] == std::string(32, 'k') + "... (8 more bytes)");
  CHECK(out[2] == "v");
  CHECK(out[3] == "... (2 more arguments)");
}

TEST_CASE("arguments are read in place until kept, then from the copy", "[slowlog]") {
  std::string buffer = "SETkey:1value";
  const std::vector<std::string_view> argv{std::string_view(buffer).substr(0, 3),
                                           std::string_view(buffer).substr(3, 5),
                                           std::string_view(buffer).substr(8, 5)};
  ArgvHead head;
  head.refer(argv);
  CHECK(head.redis_argv() == std::vector<std::string>{"SET", "key:1", "value"});
  head.keep();
  // The session reuses its input buffer once every pending request's head is kept.
  buffer.replace(0, buffer.size(), buffer.size(), 'x');
  CHECK(head.redis_argv() == std::vector<std::string>{"SET", "key:1", "value"});
  head.keep();  // a second call copies nothing again
  CHECK(head.redis_argv() == std::vector<std::string>{"SET", "key:1", "value"});
}

TEST_CASE("each thread keeps max_len entries, the oldest go first", "[slowlog]") {
  SlowLog log(2, 3);
  for (int i = 0; i < 5; ++i) log.record(0, entry_for("a" + std::to_string(i)));
  log.record(1, entry_for("b0"));
  CHECK(log.size() == 4);
  const auto all = log.newest(100);
  REQUIRE(all.size() == 4);
  // Newest first across both threads, by the process-wide id.
  CHECK(all[0].argv[0] == "b0");
  CHECK(all[1].argv[0] == "a4");
  CHECK(all[3].argv[0] == "a2");
  CHECK(all[0].id > all[1].id);
  CHECK(log.newest(2).size() == 2);
}

TEST_CASE("reset empties the rings but not the cumulative histograms", "[slowlog]") {
  SlowLog log(1, 8);
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
