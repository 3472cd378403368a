// Corral's histograms of the commands it answers: Redis 7.0's LATENCY HISTOGRAM buckets, counts
// summed over threads, reset to a snapshot, and merged into the upstream's reply (RESP2 and RESP3).
#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "proxy/commands/command_table.hpp"
#include "proxy/local/latency_histogram_reply.hpp"
#include "proxy/local/local_latency.hpp"

using namespace corral::proxy;
using std::chrono::microseconds;
using std::chrono::nanoseconds;

namespace {
std::size_t id_of(std::string_view name) {
  for (const auto& row : all_commands()) {
    if (row.name == name) return command_id(row);
  }
  FAIL("no row " << name);
  return 0;
}

std::string merged(std::string_view upstream, std::vector<std::string_view> argv,
                   const LocalLatency& latency) {
  return merged_latency_histogram(upstream, argv, latency);
}
}  // namespace

TEST_CASE("local latency: Redis's bucket bounds, from Redis's own durations in whole usec") {
  // redis-server 7.0.15 labels its buckets 1 2 4 8 16 33 66 132 264 528 1056 ...
  const std::vector<std::int64_t> labels{1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056};
  for (std::size_t b = 0; b < labels.size(); ++b) {
    CHECK(LocalLatency::bucket_label_usec(b) == labels[b]);
  }
  CHECK(LocalLatency::bucket_of(nanoseconds(0)) == 0);
  CHECK(LocalLatency::bucket_of(microseconds(1)) == 0);
  CHECK(LocalLatency::bucket_of(nanoseconds(1031)) == 0);
  CHECK(LocalLatency::bucket_of(nanoseconds(1032)) == 1);
  CHECK(LocalLatency::bucket_of(microseconds(2)) == 1);
  CHECK(LocalLatency::bucket_of(nanoseconds(2063)) == 1);
  CHECK(LocalLatency::bucket_of(nanoseconds(2064)) == 2);
  CHECK(LocalLatency::bucket_of(microseconds(33)) == 5);
  CHECK(LocalLatency::bucket_of(std::chrono::seconds(5)) == LocalLatency::kBuckets - 1);
}

TEST_CASE("local latency: counts of every thread, reset to the snapshot taken when sent") {
  LocalLatency latency(all_commands().size());
  const std::size_t ping = id_of("ping");
  latency.record(ping, microseconds(1));
  std::thread([&] {
    latency.record(ping, microseconds(1));
    latency.record(ping, microseconds(40));
  }).join();
  auto counts = latency.counts(ping);
  CHECK(counts[0] == 2);
  CHECK(counts[LocalLatency::bucket_of(microseconds(40))] == 1);

  const auto baseline = latency.snapshot();
  latency.record(ping, microseconds(1));  // answered after the RESETSTAT was sent: kept
  latency.reset_to(baseline);
  counts = latency.counts(ping);
  CHECK(counts[0] == 1);
  CHECK(counts[LocalLatency::bucket_of(microseconds(40))] == 0);
  CHECK(latency.counts(all_commands().size())[0] == 0);  // a learned row's id
}

TEST_CASE(
    "local latency: merged into Redis's reply, Redis's entries of Corral's commands dropped") {
  LocalLatency latency(all_commands().size());
  latency.record(id_of("client|id"), microseconds(1));
  latency.record(id_of("client|id"), microseconds(3));
  latency.record(id_of("client|list"), microseconds(20));
  // Redis's reply in RESP2: set (its own) and client|id (Corral's connections' CLIENT ID).
  const std::string set_entry =
      "$3\r\nset\r\n*4\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n*2\r\n:1\r\n:2\r\n";
  const std::string upstream = "*4\r\n" + set_entry +
                               "$9\r\nclient|id\r\n*4\r\n$5\r\ncalls\r\n:7\r\n"
                               "$14\r\nhistogram_usec\r\n*2\r\n:2\r\n:7\r\n";
  const std::string client_id =
      "$9\r\nclient|id\r\n*4\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n*4\r\n:1\r\n:1\r\n:"
      "4\r\n:2\r\n";
  const std::string client_list =
      "$11\r\nclient|list\r\n*4\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n*2\r\n:33\r\n:"
      "1\r\n";

  CHECK(merged(upstream, {"LATENCY", "HISTOGRAM"}, latency) ==
        "*6\r\n" + set_entry + client_id + client_list);
  CHECK(merged("*0\r\n", {"LATENCY", "HISTOGRAM", "client"}, latency) ==
        "*4\r\n" + client_id + client_list);
  CHECK(merged("*0\r\n", {"latency", "histogram", "CLIENT|ID"}, latency) == "*2\r\n" + client_id);
  CHECK(merged("*0\r\n", {"latency", "histogram", "blabla", "client|nosuch", "a|b|c"}, latency) ==
        "*0\r\n");
  CHECK(merged(upstream, {"LATENCY", "HISTOGRAM", "set"}, latency) == upstream);
  CHECK(merged("-ERR no\r\n", {"LATENCY", "HISTOGRAM"}, latency) == "-ERR no\r\n");

  // RESP3: maps all the way down.
  CHECK(merged("%0\r\n", {"LATENCY", "HISTOGRAM", "client|list"}, latency) ==
        "%1\r\n$11\r\nclient|list\r\n%2\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n"
        "%1\r\n:33\r\n:1\r\n");
}
