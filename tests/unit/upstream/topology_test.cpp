// The topology conversation against real redis-servers: a one-node cluster (cluster-enabled, all
// slots added) found past a seed that is down, and a server without cluster support refused.
#include <utility>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "redis_server_process.hpp"
#include "upstream/call.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/cluster/topology.hpp"
#include "upstream/connection.hpp"

namespace asio = boost::asio;
using namespace corral::upstream;
using namespace std::chrono_literals;

namespace {

corral::config::UpstreamSettings seeds(std::initializer_list<unsigned short> ports) {
  corral::config::UpstreamSettings s;
  s.cluster = true;
  for (auto port : ports) s.servers.push_back({"127.0.0.1", port});
  s.connect_timeout = 500ms;
  s.command_timeout = 1s;
  return s;
}

// Runs `io` until `done` or about 5 s.
template <class Done>
void run_until(asio::io_context& io, Done done) {
  for (int i = 0; i < 250 && !done(); ++i) io.run_for(20ms);
}

// Gives the one-node cluster on `port` every slot.
void add_all_slots(asio::io_context& io, unsigned short port) {
  ConnectionOptions options;
  options.server = {"127.0.0.1", port};
  auto connection = std::make_shared<Connection>(io.get_executor(), options, nullptr);
  connection->start();
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const std::string_view add[] = {"CLUSTER", "ADDSLOTSRANGE", "0", "16383"};
        const auto result = co_await call(*connection, add);
        REQUIRE(result.ok());
        CHECK(result.reply == "+OK\r\n");
        done = true;
      },
      asio::detached);
  run_until(io, [&] { return done; });
  REQUIRE(done);
  connection->close();
}

}  // namespace

TEST_CASE("the topology comes from a live node when the first seed is down",
          "[upstream][cluster]") {
  const std::string nodes_file =
      "/tmp/corral-topology-test-" + std::to_string(::getpid()) + "-nodes.conf";
  std::remove(nodes_file.c_str());
  corral::test::RedisServerProcess node(
      {"--cluster-enabled", "yes", "--cluster-config-file", nodes_file});
  corral::test::RedisServerProcess dead;
  const unsigned short dead_port = dead.port();
  dead.stop();

  asio::io_context io;
  add_all_slots(io, node.port());
  auto topology = std::make_shared<Topology>(io.get_executor(), seeds({dead_port, node.port()}));
  CHECK(topology->current() == nullptr);
  topology->start();
  run_until(io, [&] { return topology->current() != nullptr; });
  const auto map = topology->current();
  REQUIRE(map);
  CHECK(map->slots_covered() == kSlotCount);
  REQUIRE(map->primaries.size() == 1);
  CHECK(map->nodes[map->owner[key_slot("foo")]].endpoint.port == node.port());
  CHECK(topology->refreshes(RefreshReason::startup) == 1);
  CHECK(topology->version() == 1);

  // Requests within a second of the last refresh are paced: one more refresh, not three.
  topology->request_refresh(RefreshReason::moved);
  topology->request_refresh(RefreshReason::moved);
  topology->request_refresh(RefreshReason::connection);
  io.run_for(300ms);
  CHECK(topology->refreshes(RefreshReason::moved) == 0);
  run_until(io, [&] { return topology->version() == 2; });
  CHECK(topology->refreshes(RefreshReason::moved) == 1);
  CHECK(topology->refreshes(RefreshReason::connection) == 0);
  topology->stop();
  io.run_for(50ms);
  std::remove(nodes_file.c_str());
}

TEST_CASE("a server without cluster support gives no map and counts a failure",
          "[upstream][cluster]") {
  corral::test::RedisServerProcess plain;
  asio::io_context io;
  auto topology = std::make_shared<Topology>(io.get_executor(), seeds({plain.port()}));
  topology->start();
  run_until(io, [&] { return topology->counters().refresh_failures.load() > 0; });
  CHECK(topology->counters().refresh_failures.load() >= 1);
  CHECK(topology->current() == nullptr);
  topology->stop();
  io.run_for(50ms);
}

TEST_CASE("a node refusing the password is the topology's failure", "[upstream][cluster]") {
  corral::test::RedisServerProcess guarded({"--requirepass", "right"});
  asio::io_context io;
  auto settings = seeds({guarded.port()});
  settings.password = "wrong";
  auto topology = std::make_shared<Topology>(io.get_executor(), settings);
  CHECK(topology->last_failure().empty());
  topology->start();
  run_until(io, [&] { return !topology->last_failure().empty(); });
  const auto failure = topology->last_failure();
  CHECK(failure.starts_with("127.0.0.1:" + std::to_string(guarded.port()) + ": "));
  CHECK(failure.find("refused the handshake: WRONGPASS") != std::string::npos);
  CHECK(topology->current() == nullptr);
  topology->stop();
  io.run_for(50ms);
}

TEST_CASE("the slot-unserved error names the map's failure on one line", "[upstream][cluster]") {
  CHECK(slot_unserved_error("10.0.0.1:7000: refused the handshake: WRONGPASS bad\r\nx") ==
        "CLUSTERDOWN Hash slot not served (Corral is waiting for the cluster's slot map; last "
        "attempt: 10.0.0.1:7000: refused the handshake: WRONGPASS bad  x)");
}
