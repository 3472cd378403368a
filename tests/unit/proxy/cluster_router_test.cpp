// Cluster routing through the dispatcher over the recording cluster seam: slot routing, the
// redirects a client must never see, CROSSSLOT refusals, splits and fan-outs with their merges,
// SCAN cursors and failing fast without a primary (sessions: cluster_sessions_test.cpp).
#include <catch2/catch.hpp>

#include "recording_cluster.hpp"
#include "resp/reply.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/cluster_fast_path.hpp"
#include "upstream/cluster/cluster_scan.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::proxy::test {

namespace {
using upstream::key_slot;
using upstream::RedirectKind;
using upstream::RefreshReason;

// Keys whose slots are known: "bar" is in the first shard (port 7000), "foo" in the second.
const bool kKeysAsExpected = key_slot("bar") < 8192 && key_slot("foo") >= 8192;

std::uint64_t redirects(RecordingClusterLinks& links, RedirectKind kind) {
  return links.counters().redirects[static_cast<std::size_t>(kind)].load();
}
}  // namespace

TEST_CASE("a keyed command goes to its slot's primary", "[cluster]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"GET", "foo"});
  CHECK(c.links.at(7001).bytes() == std::vector<std::string>{wire({"GET", "foo"})});
  CHECK_FALSE(c.links.used(7000));
  c.links.at(7001).answer("$1\r\nx\r\n");
  CHECK(client.reply() == "$1\r\nx\r\n");
  client.send({"SET", "bar", "1"});
  CHECK(c.links.at(7000).bytes() == std::vector<std::string>{wire({"SET", "bar", "1"})});
}

TEST_CASE("MOVED re-routes the slot and retries; the client sees only the answer", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"GET", "foo"});
  const auto slot = std::to_string(key_slot("foo"));
  c.links.at(7001).answer("-MOVED " + slot + " 127.0.0.1:7000\r\n");
  CHECK(client.reply().empty());
  CHECK(c.links.at(7000).bytes() == std::vector<std::string>{wire({"GET", "foo"})});
  c.links.at(7000).answer("$1\r\ny\r\n");
  CHECK(client.reply() == "$1\r\ny\r\n");
  CHECK(c.links.map.owner[key_slot("foo")] == 0);  // later commands go straight there
  CHECK(c.links.refreshes == std::vector<RefreshReason>{RefreshReason::moved});
  CHECK(redirects(c.links, RedirectKind::moved) == 1);
  client.send({"GET", "foo"});
  CHECK(c.links.at(7000).sent.size() == 2);
}

TEST_CASE("the fast path: no ClusterCommand until a reply is a redirect", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"GET", "foo"});
  CHECK(c.router.fast_path_in_flight() == 1);
  CHECK(dynamic_cast<upstream::ClusterFastPath*>(c.links.at(7001).pending.front().target.get()));
  c.links.at(7001).answer("-MOVED " + std::to_string(key_slot("foo")) + " 127.0.0.1:7000\r\n");
  CHECK(c.router.fast_path_in_flight() == 0);
  // The retry is the redirect-following command's, which would follow a second MOVED too.
  CHECK(dynamic_cast<upstream::ClusterCommand*>(c.links.at(7000).pending.front().target.get()));
  CHECK(c.links.at(7000).bytes() == std::vector<std::string>{wire({"GET", "foo"})});
  CHECK(client.reply().empty());
  c.links.at(7000).answer("$3\r\nnew\r\n");
  CHECK(client.reply() == "$3\r\nnew\r\n");
  client.send({"GET", "foo"});  // the slot's new owner, on the fast path again
  CHECK(c.router.fast_path_in_flight() == 1);
  CHECK(dynamic_cast<upstream::ClusterFastPath*>(c.links.at(7000).pending.front().target.get()));
}

TEST_CASE("fast-path commands answered out of order by two nodes reach their own requests",
          "[cluster]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"GET", "foo"});
  const auto first = client.tag;
  client.send({"GET", "bar"});
  const auto second = client.tag;
  client.send({"INCR", "foo"});
  const auto third = client.tag;
  CHECK(c.router.fast_path_in_flight() == 3);
  c.links.at(7000).answer("$1\r\nb\r\n");
  c.links.at(7001).answer("$1\r\nf\r\n");
  c.links.at(7001).answer("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  CHECK(client.reply_of(first) == "$1\r\nf\r\n");
  CHECK(client.reply_of(second) == "$1\r\nb\r\n");
  CHECK(client.reply_of(third).starts_with("-WRONGTYPE"));  // not a redirect: passed as it is
  CHECK(c.router.fast_path_in_flight() == 0);
  CHECK(c.links.refreshes.empty());
}

TEST_CASE("a connection still connecting takes the ClusterCommand path", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"GET", "foo"});
  c.links.at(7001).answer("$1\r\nx\r\n");
  c.links.at(7001).start_connecting();
  client.send({"GET", "foo"});
  CHECK(c.router.fast_path_in_flight() == 0);
  CHECK(dynamic_cast<upstream::ClusterCommand*>(c.links.at(7001).pending.front().target.get()));
  c.links.at(7001).answer("$1\r\ny\r\n");
  CHECK(client.reply() == "$1\r\ny\r\n");
}

TEST_CASE("MOVED to a node the map does not know adds it", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"GET", "foo"});
  c.links.at(7001).answer("-MOVED " + std::to_string(key_slot("foo")) + " 10.1.1.1:7777\r\n");
  CHECK(c.links.at(7777).bytes() == std::vector<std::string>{wire({"GET", "foo"})});
  CHECK(c.links.map.nodes[c.links.map.owner[key_slot("foo")]].endpoint.host == "10.1.1.1");
}

TEST_CASE("ASK sends ASKING and the command to the target without changing the map", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"GET", "foo"});
  c.links.at(7001).answer("-ASK " + std::to_string(key_slot("foo")) + " 127.0.0.1:7000\r\n");
  CHECK(c.links.at(7000).bytes() ==
        std::vector<std::string>{wire({"ASKING"}), wire({"GET", "foo"})});
  c.links.at(7000).answer("+OK\r\n");
  c.links.at(7000).answer("$1\r\nz\r\n");
  CHECK(client.reply() == "$1\r\nz\r\n");
  CHECK(c.links.map.owner[key_slot("foo")] == 1);
  CHECK(c.links.refreshes.empty());
  CHECK(redirects(c.links, RedirectKind::ask) == 1);
}

TEST_CASE("TRYAGAIN retries after a short backoff", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"GET", "foo"});
  c.links.at(7001).answer("-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
  REQUIRE(c.links.later.size() == 1);
  CHECK(c.links.delays.front().count() > 0);
  CHECK(client.reply().empty());
  c.links.run_later();
  CHECK(c.links.at(7001).sent.size() == 2);
  c.links.at(7001).answer(":1\r\n");
  CHECK(client.reply() == ":1\r\n");
  CHECK(redirects(c.links, RedirectKind::tryagain) == 1);
}

TEST_CASE("redirects stop after max_redirects hops with an error, never a MOVED", "[cluster]") {
  ClusterProxy c;  // max_redirects: 3
  Client client(c.proxy);
  client.send({"GET", "foo"});
  const auto slot = std::to_string(key_slot("foo"));
  for (int hop = 0; hop < 4; ++hop) {
    const std::uint16_t from = hop % 2 == 0 ? 7001 : 7000;
    const std::string to = hop % 2 == 0 ? "7000" : "7001";
    c.links.at(from).answer("-MOVED " + slot + " 127.0.0.1:" + to + "\r\n");
  }
  CHECK(client.reply().empty());
  CHECK(client.failure().starts_with(
      "ERR too many cluster redirects (max_redirects 3), last: MOVED"));
}

TEST_CASE("keys in several slots: CROSSSLOT locally unless the command splits", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"RENAME", "foo", "bar"});
  CHECK(client.reply() == "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  client.send({"MSETNX", "foo", "1", "bar", "2"});
  CHECK(client.reply() == "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  client.send({"EVAL", "return 1", "2", "foo", "bar"});
  CHECK(client.reply() == "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  CHECK(c.links.shared.empty());
  CHECK(c.links.counters().crossslot_refused.load() == 3);
  client.send({"RENAME", "{foo}a", "{foo}b"});  // one slot: passes
  CHECK(c.links.at(7001).sent.size() == 1);
}

TEST_CASE("MGET splits by slot and answers in the request's key order", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"MGET", "foo", "bar", "{foo}x", "nope"});
  const bool nope_first_shard = key_slot("nope") < 8192;
  // One sub-command per slot (not per node): foo and {foo}x share a slot.
  auto& second = c.links.at(7001);
  auto& first = c.links.at(7000);
  CHECK(second.sent.front().bytes == wire({"MGET", "foo", "{foo}x"}));
  CHECK(first.sent.front().bytes == wire({"MGET", "bar"}));
  CHECK(first.sent.size() + second.sent.size() == 3);
  first.answer("*1\r\n$1\r\nB\r\n");
  second.answer("*2\r\n$1\r\nF\r\n$1\r\nX\r\n");
  CHECK(client.reply().empty());
  (nope_first_shard ? first : second).answer("*1\r\n$-1\r\n");
  CHECK(client.reply() == "*4\r\n$1\r\nF\r\n$1\r\nB\r\n$1\r\nX\r\n$-1\r\n");
}

TEST_CASE("DEL sums its parts, MSET answers OK, a failing part gives its error", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"DEL", "foo", "bar"});
  c.links.at(7001).answer(":1\r\n");
  c.links.at(7000).answer(":0\r\n");
  CHECK(client.reply() == ":1\r\n");
  client.send({"MSET", "foo", "1", "bar", "2"});
  CHECK(c.links.at(7001).sent.back().bytes == wire({"MSET", "foo", "1"}));
  CHECK(c.links.at(7000).sent.back().bytes == wire({"MSET", "bar", "2"}));
  c.links.at(7001).answer("+OK\r\n");
  c.links.at(7000).answer("+OK\r\n");
  CHECK(client.reply() == "+OK\r\n");
  client.send({"EXISTS", "foo", "bar"});
  c.links.at(7001).answer("-OOM command not allowed\r\n");
  c.links.at(7000).answer(":1\r\n");
  CHECK(client.reply() == "-OOM command not allowed\r\n");
}

TEST_CASE("keyless fan-out: DBSIZE sums, KEYS joins, SCRIPT LOAD must agree", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"DBSIZE"});
  c.links.at(7000).answer(":3\r\n");
  c.links.at(7001).answer(":4\r\n");
  CHECK(client.reply() == ":7\r\n");
  CHECK_FALSE(c.links.used(7100));  // replicas are not asked
  client.send({"KEYS", "*"});
  c.links.at(7000).answer("*1\r\n$1\r\na\r\n");
  c.links.at(7001).answer("*2\r\n$1\r\nb\r\n$1\r\nc\r\n");
  CHECK(client.reply() == "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
  client.send({"SCRIPT", "LOAD", "return 1"});
  c.links.at(7000).answer("$2\r\nab\r\n");
  c.links.at(7001).answer("$2\r\ncd\r\n");
  CHECK(client.failure() == "ERR the cluster's primaries answered differently");
}

TEST_CASE("SCAN walks every primary with a cursor of Corral's", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"SCAN", "0", "COUNT", "10"});
  CHECK(c.links.at(7000).sent.back().bytes == wire({"SCAN", "0", "COUNT", "10"}));
  c.links.at(7000).answer("*2\r\n$2\r\n12\r\n*1\r\n$1\r\na\r\n");
  const auto first = resp::decode_reply(client.reply());
  REQUIRE(first);
  const std::string cursor = first->elements[0].text;
  CHECK(cursor != "0");
  client.send({"SCAN", cursor, "COUNT", "10"});
  CHECK(c.links.at(7000).sent.back().bytes == wire({"SCAN", "12", "COUNT", "10"}));
  c.links.at(7000).answer("*2\r\n$1\r\n0\r\n*0\r\n");  // first primary done: on to the second
  const std::string next = resp::decode_reply(client.reply())->elements[0].text;
  CHECK(next != "0");
  client.send({"SCAN", next});
  CHECK(c.links.at(7001).sent.back().bytes == wire({"SCAN", "0"}));
  c.links.at(7001).answer("*2\r\n$1\r\n0\r\n*1\r\n$1\r\nb\r\n");
  CHECK(client.reply() == "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nb\r\n");  // the walk is over

  // A walk whose primaries changed is refused rather than skipping keys.
  c.links.map.nodes[1].endpoint.port = 7002;
  client.send({"SCAN", next});
  CHECK(client.failure() == upstream::kErrScanTopologyChanged);
  client.send({"SCAN", "banana"});
  CHECK(client.failure() == "ERR invalid cursor");
}

TEST_CASE("no primary for the slot: fail fast and ask for a refresh", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  c.links.map.owner[key_slot("foo")] = -1;
  client.send({"GET", "foo"});
  CHECK(client.failure() == upstream::kErrSlotUnserved);
  CHECK(c.links.refreshes == std::vector<RefreshReason>{RefreshReason::clusterdown});
  c.links.map.nodes[0].healthy = false;  // the cluster says the primary is failing
  client.send({"GET", "bar"});
  CHECK(client.failure().empty());  // it waits (cluster_hold_test.cpp)
  CHECK_FALSE(c.links.used(7000));
  CHECK(c.links.refreshes.size() == 2);  // until the map names the promoted replica
}

TEST_CASE("before the first slot map a request waits for one, for a bounded time", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  const auto map = c.links.map;
  c.links.map = upstream::SlotMap();  // no map yet at all
  client.send({"GET", "foo"});
  CHECK(client.failure().empty());
  c.links.run_later();
  c.links.run_later();
  CHECK(c.links.shared.empty());
  c.links.map = map;  // the first refresh answered
  c.links.run_later();
  CHECK(c.links.at(7001).bytes() == std::vector<std::string>{wire({"GET", "foo"})});

  c.links.map = upstream::SlotMap();
  client.send({"DBSIZE"});
  // connect_timeout + 2 x command_timeout (1 s + 4 s by default), polled every 50 ms.
  for (int i = 0; i < 99; ++i) c.links.run_later();
  CHECK(client.failure().empty());
  c.links.run_later();
  CHECK(client.failure() == upstream::kErrSlotUnserved);
  CHECK(c.links.later.empty());
}

TEST_CASE("a node that cannot take the command, or loses it, triggers a refresh", "[cluster]") {
  ClusterProxy c;
  Client client(c.proxy);
  client.send({"GET", "bar"});
  c.links.at(7000).answer("$1\r\nv\r\n");
  c.links.at(7000).refuse = true;
  client.send({"SET", "bar", "1"});
  CHECK(client.failure().empty());  // nothing was sent: it waits for the node
  CHECK(c.links.refreshes == std::vector<RefreshReason>{RefreshReason::connection});
  c.links.at(7000).refuse = false;
  c.links.run_later();
  c.links.at(7000).answer("+OK\r\n");
  CHECK(client.reply() == "+OK\r\n");
  client.send({"SET", "bar", "2"});
  auto pending = c.links.at(7000).pending.front();
  pending.target->on_failure(pending.tag, "ERR upstream connection lost");
  CHECK(client.failure() == "ERR upstream connection lost");  // it may have run
  CHECK(c.links.refreshes.size() == 2);
}

TEST_CASE("CLUSTERDOWN is retried for up to command_timeout or failover_hold, then answered",
          "[cluster]") {
  auto settings = ClusterProxy::cluster_settings();
  settings.upstream.command_timeout = std::chrono::milliseconds(200);  // two retries
  settings.upstream.failover_hold = std::chrono::milliseconds(0);
  ClusterProxy c(settings);
  Client client(c.proxy);
  client.send({"GET", "foo"});
  c.links.at(7001).answer("-CLUSTERDOWN The cluster is down\r\n");
  CHECK(client.reply().empty());
  CHECK(c.links.refreshes.back() == RefreshReason::clusterdown);
  c.links.run_later();
  c.links.at(7001).answer("$2\r\nok\r\n");  // the failover completed meanwhile
  CHECK(client.reply() == "$2\r\nok\r\n");
  client.send({"GET", "foo"});
  for (int i = 0; i < 3; ++i) {
    c.links.at(7001).answer("-CLUSTERDOWN The cluster is down\r\n");
    c.links.run_later();
  }
  CHECK(client.reply() == "-CLUSTERDOWN The cluster is down\r\n");
  CHECK(c.links.at(7001).sent.size() == 5);  // 2 for the first GET, 1 + 2 retries
}

TEST_CASE("read_from: replica sends reads to a replica and writes to the primary", "[cluster]") {
  auto settings = ClusterProxy::cluster_settings();
  settings.upstream.read_from = config::ReadFrom::replica;
  ClusterProxy c(settings);
  Client client(c.proxy);
  client.send({"GET", "foo"});
  CHECK(c.links.at(7101).sent.size() == 1);
  client.send({"SET", "foo", "1"});
  CHECK(c.links.at(7001).sent.size() == 1);
  c.links.map.nodes[3].healthy = false;  // no healthy replica: replicas only, so an error
  client.send({"GET", "foo"});
  CHECK(client.failure() == upstream::kErrNoReplica);
  CHECK(c.links.at(7001).sent.size() == 1);
  CHECK(c.links.at(7101).sent.size() == 1);
}

TEST_CASE("read_from: prefer_replica falls back to the primary", "[cluster]") {
  auto settings = ClusterProxy::cluster_settings();
  settings.upstream.read_from = config::ReadFrom::prefer_replica;
  ClusterProxy c(settings);
  Client client(c.proxy);
  client.send({"GET", "foo"});
  CHECK(c.links.at(7101).sent.size() == 1);
  c.links.map.nodes[3].healthy = false;  // no healthy replica: the primary serves the read
  client.send({"GET", "foo"});
  CHECK(c.links.at(7001).sent.size() == 1);
}

}  // namespace corral::proxy::test
