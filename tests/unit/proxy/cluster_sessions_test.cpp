// Cluster sessions through the dispatcher over the recording cluster seam: dedicated connections
// by slot (blocking commands, MULTI, WATCH), CORRAL.CLUSTER and INFO, a cache fetch through a
// failover, and what a session sees when its slot moves (see cluster_router_test.cpp for routing).
#include <catch2/catch.hpp>

#include "recording_cluster.hpp"
#include "resp/reply.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/cluster/node_bound_link.hpp"

namespace corral::proxy::test {

namespace {
using upstream::key_slot;
using upstream::RefreshReason;
}  // namespace

TEST_CASE("SELECT other than 0 is refused; blocking commands get their slot's node", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"SELECT", "1"});
  CHECK(client.reply() == "-ERR SELECT is not allowed in cluster mode\r\n");
  client.send({"SELECT", "0"});
  CHECK(client.reply() == "+OK\r\n");
  client.send({"BLPOP", "foo", "0"});
  REQUIRE(c.links.dedicated.size() == 1);
  CHECK(c.links.dedicated[0].first == 7001);
  CHECK(c.links.dedicated[0].second->bytes() ==
        std::vector<std::string>{wire({"BLPOP", "foo", "0"})});
  Client other(c.proxy);
  other.send({"BLMOVE", "foo", "bar", "LEFT", "RIGHT", "0"});
  CHECK(other.reply() == "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  CHECK(c.links.dedicated.size() == 1);
}

}  // namespace corral::proxy::test

namespace corral::proxy::test {

TEST_CASE("MULTI is held until its first key, then bound to that slot's node", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"MULTI"});
  CHECK(client.reply() == "+OK\r\n");
  client.send({"PING"});
  CHECK(client.reply() == "+QUEUED\r\n");
  CHECK(c.links.dedicated.empty());
  client.send({"SET", "foo", "1"});
  REQUIRE(c.links.dedicated.size() == 1);
  CHECK(c.links.dedicated[0].first == 7001);
  auto& link = *c.links.dedicated[0].second;
  CHECK(link.bytes() ==
        std::vector<std::string>{wire({"MULTI"}), wire({"PING"}), wire({"SET", "foo", "1"})});
  link.answer("+OK\r\n");
  link.answer("+QUEUED\r\n");
  link.answer("+QUEUED\r\n");
  CHECK(client.reply() == "+QUEUED\r\n");
  client.send({"INCR", "{foo}n"});  // same slot: joins
  CHECK(link.sent.size() == 4);
  client.send({"GET", "bar"});  // another slot: refused, and EXEC aborts
  CHECK(client.reply() == "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  CHECK(link.sent.size() == 4);
  client.send({"EXEC"});
  CHECK(link.sent.back().bytes == wire({"DISCARD"}));
  link.answer("+QUEUED\r\n");
  link.answer("+OK\r\n");
  CHECK(client.reply() == "-EXECABORT Transaction discarded because of previous errors.\r\n");
}

TEST_CASE("a held MULTI: DISCARD and a keyless EXEC need no key", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"MULTI"});
  client.send({"DISCARD"});
  CHECK(client.reply() == "+OK\r\n");
  CHECK(c.links.dedicated.empty());
  client.send({"MULTI"});
  client.send({"MGET", "foo", "bar"});  // keys in two slots inside MULTI
  CHECK(client.reply() == "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  client.send({"EXEC"});
  CHECK(client.reply() == "-EXECABORT Transaction discarded because of previous errors.\r\n");
  client.send({"MULTI"});
  client.send({"DBSIZE"});
  client.send({"EXEC"});  // bound to a primary at EXEC
  REQUIRE(c.links.dedicated.size() == 1);
  CHECK(c.links.dedicated[0].second->bytes() ==
        std::vector<std::string>{wire({"MULTI"}), wire({"DBSIZE"}), wire({"EXEC"})});
}

TEST_CASE("WATCH binds the connection to its key's slot", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"WATCH", "foo"});
  REQUIRE(c.links.dedicated.size() == 1);
  CHECK(c.links.dedicated[0].first == 7001);
  c.links.dedicated[0].second->answer("+OK\r\n");
  client.send({"MULTI"});
  CHECK(c.links.dedicated[0].second->sent.back().bytes == wire({"MULTI"}));
  c.links.dedicated[0].second->answer("+OK\r\n");
  client.send({"SET", "bar", "1"});
  CHECK(client.reply() == "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
}

}  // namespace corral::proxy::test

namespace corral::proxy::test {

TEST_CASE("after a blocking command, a command of another slot leaves its connection",
          "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"BLPOP", "foo", "1"});
  REQUIRE(c.links.dedicated.size() == 1);
  CHECK(client.send({"BLPOP", "bar", "1"}, 1) == session::Action::drain_then_retry);
  c.links.dedicated[0].second->answer("*-1\r\n");
  client.retry({"BLPOP", "bar", "1"});
  REQUIRE(c.links.dedicated.size() == 2);
  CHECK(c.links.dedicated[1].first == 7000);
  CHECK(c.links.dedicated[0].second->closes == 1);
  c.links.dedicated[1].second->answer("*-1\r\n");
  client.send({"GET", "foo"});
  CHECK(c.links.at(7001).sent.size() == 1);
}

}  // namespace corral::proxy::test

namespace corral::proxy::test {

TEST_CASE("CORRAL.CLUSTER shows the slot map and INFO a per-node summary", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"CORRAL.CLUSTER"});
  const auto reply = resp::decode_reply(client.reply());
  REQUIRE(reply);
  REQUIRE(reply->elements.size() == 14);
  CHECK(reply->elements[0].text == "slots_served");
  CHECK(reply->elements[1].integer == 16384);
  const auto& nodes = reply->elements[13].elements;
  REQUIRE(nodes.size() == 4);
  CHECK(nodes[0].elements[1].text == "127.0.0.1:7000");
  CHECK(nodes[0].elements[5].text == "primary");
  CHECK(nodes[0].elements[9].text == "0-8191");
  CHECK(nodes[3].elements[5].text == "replica");
  // INFO asks every primary for its DBSIZE at once and no node for its INFO.
  client.send({"INFO"});
  REQUIRE(c.links.at(7000).pending.size() == 1);
  REQUIRE(c.links.at(7001).pending.size() == 1);
  CHECK(c.links.at(7000).pending.front().bytes == "*1\r\n$6\r\nDBSIZE\r\n");
  c.links.at(7001).answer(":42\r\n");
  CHECK(client.reply().empty());  // the last primary has not answered yet
  c.links.at(7000).pending.front().target->on_failure(c.links.at(7000).pending.front().tag,
                                                      "ERR upstream timed out");
  const std::string info = client.reply();
  CHECK(info.find("# Proxy") != std::string::npos);
  CHECK(info.find("node1:address=127.0.0.1:7001,role=primary,health=online,"
                  "slots=8192-16383,connections=1,connected=yes,keys=42") != std::string::npos);
  CHECK(info.find("node0:address=127.0.0.1:7000,role=primary,health=online,slots=0-8191,"
                  "connections=1,connected=no,keys=?") != std::string::npos);
  CHECK(info.find("node3:address=127.0.0.1:7101,role=replica") != std::string::npos);
}

}  // namespace corral::proxy::test

namespace corral::proxy::test {

TEST_CASE("a cache fetch waits out a failover: unreachable nodes are retried on the new map",
          "[cluster]") {
  RecordingClusterLinks links;
  auto replies = std::make_shared<Replies>();
  upstream::ClusterCommandOptions options;
  options.slot = key_slot("foo");
  options.read_only = true;
  options.unreachable_retries = 3;
  auto fetch =
      std::make_shared<upstream::ClusterCommand>(links, wire({"GET", "foo"}), options, replies, 7);
  fetch->start();
  auto pending = links.at(7001).pending.front();
  links.at(7001).pending.clear();
  pending.target->on_failure(pending.tag, "ERR upstream connection lost");  // the primary died
  CHECK(replies->failures.empty());
  CHECK(links.refreshes.back() == RefreshReason::connection);
  links.at(7001).refuse = true;  // still down: retried again
  links.run_later();
  CHECK(replies->failures.empty());
  for (std::size_t slot = 8192; slot < upstream::kSlotCount; ++slot) links.map.owner[slot] = 3;
  links.run_later();  // the map now names the promoted replica
  links.at(7101).answer("$1\r\nv\r\n");
  CHECK(replies->replies[7] == "$1\r\nv\r\n");

  auto give_up =
      std::make_shared<upstream::ClusterCommand>(links, wire({"GET", "foo"}), options, replies, 8);
  links.at(7101).refuse = true;
  give_up->start();
  for (int i = 0; i < 3; ++i) links.run_later();
  CHECK(replies->failures[8] == "ERR upstream unavailable");
}

}  // namespace corral::proxy::test

namespace corral::proxy::test {

TEST_CASE("a blocking command answered MOVED blocks again on the slot's new owner", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"BLPOP", "foo", "0"});  // slot 12182, on 7001
  REQUIRE(c.links.dedicated.size() == 1);
  c.links.dedicated[0].second->answer("-MOVED 12182 127.0.0.1:7000\r\n");
  CHECK(client.reply().empty());
  REQUIRE(c.links.dedicated.size() == 2);
  CHECK(c.links.dedicated[0].second->closes == 1);
  CHECK(c.links.dedicated[1].first == 7000);
  CHECK(c.links.dedicated[1].second->bytes() ==
        std::vector<std::string>{wire({"BLPOP", "foo", "0"})});
  CHECK(c.links.map.owner[12182] == 0);  // routed there from now on
  CHECK(c.links.refreshes.back() == upstream::RefreshReason::moved);
  c.links.dedicated[1].second->answer("*2\r\n$3\r\nfoo\r\n$1\r\nx\r\n");
  CHECK(client.reply() == "*2\r\n$3\r\nfoo\r\n$1\r\nx\r\n");
}

TEST_CASE("a transaction whose slot moved: a clear error, EXECABORT, the next one on the new owner",
          "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"MULTI"});
  client.send({"SET", "foo", "1"});
  REQUIRE(c.links.dedicated.size() == 1);
  auto& link = *c.links.dedicated[0].second;
  link.answer("+OK\r\n");
  link.answer("-MOVED 12182 127.0.0.1:7000\r\n");
  CHECK(client.reply() ==
        "-ERR the slot 12182 moved to 127.0.0.1:7000 during the session; retry the "
        "transaction\r\n");
  client.send({"EXEC"});
  link.answer("-MOVED 12182 127.0.0.1:7000\r\n");
  CHECK(client.reply() ==
        "-EXECABORT Transaction discarded: its slot 12182 moved to 127.0.0.1:7000; retry it\r\n");
  client.send({"MULTI"});
  client.send({"SET", "foo", "2"});
  REQUIRE(c.links.dedicated.size() == 2);
  CHECK(c.links.dedicated[1].first == 7000);
}

}  // namespace corral::proxy::test

namespace corral::proxy::test {

TEST_CASE("a shard channel the node ends because its slot moved is subscribed again there",
          "[cluster]") {
  RecordingClusterLinks links;
  config::UpstreamSettings settings;
  settings.max_redirects = 3;
  upstream::ClusterRouter router(links, settings);
  const std::shared_ptr<upstream::Link> link =
      router.dedicated_for_slot(static_cast<int>(key_slot("foo")), 0, 2);
  REQUIRE(link);
  auto client = std::make_shared<Replies>();
  link->set_unsolicited_target(client);
  REQUIRE(link->send(wire({"SSUBSCRIBE", "foo"}), client, 1, true));
  auto& first = *links.dedicated[0].second;
  CHECK(links.dedicated[0].first == 7001);
  first.answer("*3\r\n$10\r\nssubscribe\r\n$3\r\nfoo\r\n:1\r\n");
  // The slot moved: Redis ends the subscription by itself; the client does not hear of it.
  first.unsolicited->on_reply(0, "*3\r\n$12\r\nsunsubscribe\r\n$3\r\nfoo\r\n:0\r\n");
  CHECK(client->replies.count(0) == 0);
  CHECK(first.sent.back().bytes == wire({"SSUBSCRIBE", "foo"}));
  first.answer("-MOVED 12182 127.0.0.1:7000\r\n");
  REQUIRE(links.dedicated.size() == 2);
  CHECK(first.closes == 1);
  auto& second = *links.dedicated[1].second;
  CHECK(links.dedicated[1].first == 7000);
  CHECK(second.bytes() == std::vector<std::string>{wire({"SSUBSCRIBE", "foo"})});
  second.answer("*3\r\n$10\r\nssubscribe\r\n$3\r\nfoo\r\n:1\r\n");
  CHECK(client->replies.count(0) == 0);  // the confirmation was the link's own
  second.unsolicited->on_reply(0, "*3\r\n$8\r\nsmessage\r\n$3\r\nfoo\r\n$1\r\nx\r\n");
  CHECK(client->replies[0] == "*3\r\n$8\r\nsmessage\r\n$3\r\nfoo\r\n$1\r\nx\r\n");
  // The client's own SUNSUBSCRIBE: its confirmations reach it.
  REQUIRE(link->send(wire({"SUNSUBSCRIBE", "foo"}), client, 2, true));
  second.unsolicited->on_reply(0, "*3\r\n$12\r\nsunsubscribe\r\n$3\r\nfoo\r\n:0\r\n");
  CHECK(client->replies[0] == "*3\r\n$12\r\nsunsubscribe\r\n$3\r\nfoo\r\n:0\r\n");
}

}  // namespace corral::proxy::test
