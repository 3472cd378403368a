// Commands about the server as a whole on a cluster upstream (over the recording cluster links):
// SCRIPT KILL to every primary with its merge rule, SHUTDOWN refused, and questions about the
// server asked of the next primary when one cannot answer.
#include <catch2/catch.hpp>

#include "recording_cluster.hpp"
#include "upstream/cluster/cluster_routes.hpp"

namespace corral::proxy::test {

namespace {
config::Settings allowing_kill() {
  auto settings = ClusterProxy::cluster_settings();
  settings.client.allow_commands = {"SCRIPT KILL"};
  return settings;
}

constexpr std::string_view kNotBusy = "-NOTBUSY No scripts in execution right now.\r\n";
}  // namespace

TEST_CASE("SCRIPT KILL goes to every primary on a connection of its own", "[cluster]") {
  ClusterProxy c(allowing_kill());
  Client client(c.proxy);
  client.send({"SCRIPT", "KILL"});
  REQUIRE(c.links.dedicated.size() == 2);
  CHECK(c.links.dedicated[0].first == 7000);
  CHECK(c.links.dedicated[1].first == 7001);
  for (auto& [port, link] : c.links.dedicated) {
    CHECK(link->bytes() == std::vector<std::string>{wire({"SCRIPT", "KILL"})});
  }
  CHECK_FALSE(c.links.used(7000));  // nothing queued behind a busy shared connection
  SECTION("OK when the primary running the script killed it") {
    c.links.dedicated[0].second->answer(kNotBusy);
    CHECK(client.reply().empty());  // the other primary has not answered yet
    c.links.dedicated[1].second->answer("+OK\r\n");
    CHECK(client.reply() == "+OK\r\n");
    // Each connection is closed once its one reply has arrived.
    CHECK(c.links.dedicated[0].second->closes == 1);
    CHECK(c.links.dedicated[1].second->closes == 1);
  }
  SECTION("NOTBUSY only when every primary says so") {
    c.links.dedicated[0].second->answer(kNotBusy);
    c.links.dedicated[1].second->answer(kNotBusy);
    CHECK(client.reply() == kNotBusy);
  }
  SECTION("another error (UNKILLABLE) is the answer when nothing was killed") {
    c.links.dedicated[0].second->answer("-UNKILLABLE it wrote\r\n");
    c.links.dedicated[1].second->answer(kNotBusy);
    CHECK(client.reply() == "-UNKILLABLE it wrote\r\n");
  }
}

TEST_CASE("SCRIPT KILL skips a primary the map knows to be failing", "[cluster]") {
  ClusterProxy c(allowing_kill());
  c.links.map.nodes[0].healthy = false;
  Client client(c.proxy);
  client.send({"SCRIPT", "KILL"});
  REQUIRE(c.links.dedicated.size() == 1);
  CHECK(c.links.dedicated[0].first == 7001);
}

TEST_CASE("SHUTDOWN, even allowed, is refused on a cluster instead of stopping one primary",
          "[cluster]") {
  auto settings = ClusterProxy::cluster_settings();
  settings.client.allow_commands = {"SHUTDOWN"};
  ClusterProxy c(settings);
  Client client(c.proxy);
  for (const auto& words : {std::initializer_list<std::string_view>{"SHUTDOWN"},
                            std::initializer_list<std::string_view>{"SHUTDOWN", "NOSAVE"}}) {
    client.send(words);
    CHECK(client.failure() == upstream::kErrRefusedOnCluster);
  }
  CHECK(c.links.dedicated.empty());
  CHECK(c.links.shared.empty());
}

// The learned table is process-wide and only grows (requests hold pointers to its rows), so the
// names asked about here are ones no other test case teaches: test cases run in any order.
TEST_CASE("a name the table lacks is asked of the next primary when one cannot take it",
          "[cluster]") {
  ClusterProxy c;
  c.links.node_link(0, 0, 2);
  c.links.at(7000).refuse = true;  // backing off: its seed is down
  Client client(c.proxy);
  CHECK(client.send({"UNTAUGHTX", "k"}) == Action::wait_then_retry);
  CHECK(c.links.at(7000).sent.empty());
  REQUIRE(c.links.at(7001).bytes() ==
          std::vector<std::string>{wire({"COMMAND", "INFO", "UNTAUGHTX"})});
}

TEST_CASE("a question about the server fails over to the next primary", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  CHECK(client.send({"UNTAUGHTY", "k"}) == Action::wait_then_retry);
  auto& first = c.links.at(7000);
  REQUIRE(first.bytes() == std::vector<std::string>{wire({"COMMAND", "INFO", "UNTAUGHTY"})});
  first.pending.front().target->on_failure(0, "ERR upstream connection lost");
  CHECK(c.links.at(7001).bytes() ==
        std::vector<std::string>{wire({"COMMAND", "INFO", "UNTAUGHTY"})});
}

}  // namespace corral::proxy::test
