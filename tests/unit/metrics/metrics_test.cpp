// ThreadStats counting and bucket placement; the summed exposition, checked line by line and by
// `promtool check metrics` (Prometheus's own parser and linter).
#include "metrics/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace {

using corral::metrics::CommandResult;
using corral::metrics::kLatencyBuckets;
using corral::metrics::Metrics;
using corral::metrics::ThreadStats;
using namespace std::chrono_literals;

const char* const kNames[] = {"GET", "SET", "PING"};

Metrics make_metrics(std::size_t threads) {
  return Metrics(threads, 3, [](std::size_t id) { return std::string(kNames[id]); });
}

std::uint64_t result_count(const ThreadStats& t, std::size_t id, CommandResult r) {
  return t.commands()[id].results[static_cast<std::size_t>(r)].load();
}

std::vector<std::uint64_t> buckets(const ThreadStats& t, std::size_t id) {
  std::vector<std::uint64_t> out;
  for (const auto& b : t.commands()[id].buckets) out.push_back(b.load());
  return out;
}

// The value of the sample line that starts with `series` exactly, if there is one.
std::optional<double> sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

struct Promtool {
  int status = 0;
  std::string output;
};

// Runs `promtool check metrics` on `text`; nullopt when promtool is not installed.
std::optional<Promtool> promtool_check(const std::string& text) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return std::nullopt;
  char path[] = "/tmp/corral-metrics-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << text;
  std::string command = std::string("promtool check metrics < ") + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  Promtool result;
  char chunk[512];
  while (std::size_t n = std::fread(chunk, 1, sizeof chunk, pipe)) result.output.append(chunk, n);
  int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::remove(path);
  return result;
}

void check_with_promtool(const std::string& text) {
  auto result = promtool_check(text);
  if (!result) {
    // CI images must carry promtool: a silent skip there would let a broken exposition through.
    const char* ci = std::getenv("CI");
    if (ci != nullptr && *ci != '\0') {
      FAIL("promtool not found but CI is set: install it (Debian package prometheus)");
    }
    WARN("promtool not found; `promtool check metrics` skipped (set CI to make this fail)");
    return;
  }
  INFO(result->output);
  CHECK(result->status == 0);
  CHECK(result->output.empty());
}

}  // namespace

TEST_CASE("ThreadStats counts each event in its own counter", "[metrics]") {
  ThreadStats t(3);
  t.client_connected();
  t.client_connected();
  t.client_disconnected();
  t.client_rejected();
  t.client_output_overflow();
  t.protocol_error();
  t.upstream_connected();
  t.upstream_disconnected();
  t.upstream_connect_failure();
  t.upstream_connect_failure();
  t.upstream_timeout();
  t.upstream_reply_lost();
  CHECK(t.clients_connected_total == 2);
  CHECK(t.clients_disconnected_total == 1);
  CHECK(t.clients_rejected_total == 1);
  CHECK(t.client_output_overflow_total == 1);
  CHECK(t.protocol_errors_total == 1);
  CHECK(t.upstream_connected_total == 1);
  CHECK(t.upstream_disconnected_total == 1);
  CHECK(t.upstream_connect_failures_total == 2);
  CHECK(t.upstream_timeouts_total == 1);
  CHECK(t.upstream_replies_lost_total == 1);

  t.command(1, CommandResult::ok, 10us);
  t.command(1, CommandResult::ok, 10us);
  t.command(1, CommandResult::refused, 10us);
  t.command(2, CommandResult::unavailable, 10us);
  t.command(2, CommandResult::error, 10us);
  CHECK(result_count(t, 1, CommandResult::ok) == 2);
  CHECK(result_count(t, 1, CommandResult::refused) == 1);
  CHECK(result_count(t, 1, CommandResult::error) == 0);
  CHECK(result_count(t, 2, CommandResult::unavailable) == 1);
  CHECK(result_count(t, 2, CommandResult::error) == 1);
  CHECK(result_count(t, 0, CommandResult::ok) == 0);
  CHECK(t.commands()[1].latency_sum_ns == 30000);
}

TEST_CASE("a latency lands in the first bucket whose bound holds it", "[metrics]") {
  struct Case {
    std::chrono::nanoseconds latency;
    std::size_t bucket;
  };
  const std::size_t inf = kLatencyBuckets.size();
  auto c = GENERATE_COPY(values<Case>({
      {0ns, 0},
      {-5ns, 0},  // a clock that stepped back counts as instant
      {50us, 0},  // bounds are inclusive, like Prometheus's `le`
      {50001ns, 1},
      {100us, 1},
      {999us, 4},
      {1ms, 4},
      {1001us, 5},
      {7ms, 7},
      {500ms, 12},
      {1s, 13},
      {1000000001ns, inf},
      {10s, inf},
  }));
  ThreadStats t(1);
  t.command(0, CommandResult::ok, c.latency);
  std::vector<std::uint64_t> expected(kLatencyBuckets.size() + 1, 0);
  expected[c.bucket] = 1;
  INFO("latency " << c.latency.count() << "ns");
  CHECK(buckets(t, 0) == expected);
}

TEST_CASE("serialize sums the threads' counters", "[metrics]") {
  Metrics m = make_metrics(2);
  auto work = [&m](std::size_t index, int gets) {
    ThreadStats& t = m.thread(index);
    for (int i = 0; i < gets; ++i) t.command(0, CommandResult::ok, 40us);
    t.command(1, CommandResult::error, 3ms);
    t.client_connected();
    t.client_connected();
    t.client_disconnected();
    t.upstream_connected();
    t.upstream_timeout();
  };
  std::thread a(work, 0, 1000);
  std::thread b(work, 1, 500);
  a.join();
  b.join();

  const std::string text = m.serialize();
  INFO(text);
  CHECK(sample(text, R"(corral_commands_total{command="GET",result="ok"})") == 1500);
  CHECK(sample(text, R"(corral_commands_total{command="SET",result="error"})") == 2);
  CHECK_FALSE(sample(text, R"(corral_commands_total{command="SET",result="ok"})"));
  CHECK_FALSE(contains(text, R"(command="PING")"));  // never seen, so no series
  CHECK(sample(text, R"(corral_command_duration_seconds_count{command="GET"})") == 1500);
  CHECK(sample(text, R"(corral_command_duration_seconds_bucket{command="GET",le="5e-05"})") ==
        1500);
  CHECK(sample(text, R"(corral_command_duration_seconds_bucket{command="SET",le="0.0025"})") == 0);
  CHECK(sample(text, R"(corral_command_duration_seconds_bucket{command="SET",le="0.005"})") == 2);
  CHECK(sample(text, R"(corral_command_duration_seconds_bucket{command="SET",le="+Inf"})") == 2);
  CHECK(sample(text, R"(corral_command_duration_seconds_sum{command="SET"})") == Approx(0.006));
  CHECK(sample(text, R"(corral_command_duration_seconds_sum{command="GET"})") == Approx(0.06));
  CHECK(sample(text, "corral_client_connections_total") == 4);
  CHECK(sample(text, "corral_client_disconnections_total") == 2);
  CHECK(sample(text, "corral_client_connections") == 2);
  CHECK(sample(text, "corral_upstream_connects_total") == 2);
  CHECK(sample(text, "corral_upstream_connections") == 2);
  CHECK(sample(text, "corral_upstream_timeouts_total") == 2);
  CHECK(sample(text, "corral_upstream_replies_lost_total") == 0);
  CHECK(sample(text, "corral_client_rejected_total") == 0);
  CHECK(sample(text, R"(corral_build_info{version=")" CORRAL_VERSION R"("})") == 1);
  CHECK(sample(text, "process_start_time_seconds").value_or(0) > 1.6e9);
  CHECK(contains(text, "# TYPE corral_commands_total counter\n"));
  CHECK(contains(text, "# TYPE corral_command_duration_seconds histogram\n"));
  CHECK(contains(text, "# TYPE corral_client_connections gauge\n"));
  CHECK(contains(text, "# HELP corral_upstream_connect_failures_total "));
}

TEST_CASE("families other modules register appear in the exposition", "[metrics]") {
  Metrics m = make_metrics(1);
  auto& lookups = prometheus::BuildCounter()
                      .Name("corral_cache_lookups_total")
                      .Help("Cache lookups by policy and outcome.")
                      .Register(*m.registry());
  lookups.Add({{"policy", "feat:"}, {"outcome", "hit"}}).Increment(3);
  const std::string text = m.serialize();
  CHECK(sample(text, R"(corral_cache_lookups_total{outcome="hit",policy="feat:"})") == 3);
}

TEST_CASE("scrapes racing the writers see counters that never go down", "[metrics]") {
  Metrics m = make_metrics(2);
  std::atomic<int> running{2};
  auto work = [&](std::size_t index) {
    ThreadStats& t = m.thread(index);
    for (int i = 0; i < 200000; ++i) {
      t.command(0, CommandResult::ok, 1us);
      t.client_connected();
      t.client_disconnected();
    }
    --running;
  };
  std::thread a(work, 0);
  std::thread b(work, 1);
  double last = 0;
  while (running > 0) {
    const std::string text = m.serialize();
    double now = sample(text, R"(corral_commands_total{command="GET",result="ok"})").value_or(0);
    CHECK(now >= last);
    CHECK(sample(text, "corral_client_connections").value_or(-1) >= 0);
    last = now;
  }
  a.join();
  b.join();
  CHECK(sample(m.serialize(), R"(corral_commands_total{command="GET",result="ok"})") == 400000);
}

TEST_CASE("the exposition passes promtool check metrics", "[metrics][promtool]") {
  SECTION("idle process") {
    Metrics m = make_metrics(2);
    check_with_promtool(m.serialize());
  }
  SECTION("every family populated, plus registry families") {
    Metrics m = make_metrics(2);
    for (std::size_t i = 0; i < 2; ++i) {
      ThreadStats& t = m.thread(i);
      t.command(0, CommandResult::ok, 20us);
      t.command(1, CommandResult::error, 2ms);
      t.command(2, CommandResult::refused, 2s);
      t.command(2, CommandResult::unavailable, 1ms);
      t.client_connected();
      t.client_rejected();
      t.client_output_overflow();
      t.protocol_error();
      t.upstream_connected();
      t.upstream_connect_failure();
      t.upstream_reply_lost();
    }
    prometheus::BuildHistogram()
        .Name("corral_origin_duration_seconds")
        .Help("Origin fetch latency.")
        .Register(*m.registry())
        .Add({{"origin", "http"}}, prometheus::Histogram::BucketBoundaries{0.01, 0.1, 1})
        .Observe(0.05);
    check_with_promtool(m.serialize());
  }
}
