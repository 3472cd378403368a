// Failover holds through the dispatcher over the recording cluster seam: requests of a slot whose
// primary fails or cannot be reached wait for the promoted replica, in order, bounded in time
// (failover_hold, at least command_timeout) and in number (failover_hold_max); reads lost with
// a connection are sent again, writes that may have run are not.
#include <catch2/catch.hpp>

#include "recording_cluster.hpp"
#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::proxy::test {

namespace {
using std::chrono::milliseconds;
using upstream::key_slot;

// "bar" and "baz" hash to the first shard (primary 7000, replica 7100), "foo" to the second.
const bool kKeysAsExpected =
    key_slot("bar") < 8192 && key_slot("baz") < 8192 && key_slot("foo") >= 8192;

config::Settings hold_settings(milliseconds hold, std::size_t max = 50000) {
  auto settings = ClusterProxy::cluster_settings();
  settings.upstream.command_timeout = milliseconds(200);
  settings.upstream.failover_hold = hold;
  settings.upstream.failover_hold_max = max;
  return settings;
}

// The cluster promoted the replica of the first shard (7100): the next refresh says so.
void promote_first_replica(RecordingClusterLinks& links) {
  links.map.nodes[2].primary = true;
  links.map.nodes[2].primary_index = -1;
  for (std::size_t slot = 0; slot < 8192; ++slot) links.map.owner[slot] = 2;
  links.map.primaries = {2, 1};
}

std::string failure_of(const Client& client, std::uint64_t tag) {
  const auto it = client.slots->failures.find(tag);
  return it == client.slots->failures.end() ? std::string() : it->second;
}

std::int64_t held(RecordingClusterLinks& links) { return links.counters().requests_held.load(); }
}  // namespace

TEST_CASE("requests of a failing primary's slots wait for the promoted replica, in order",
          "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(5000)));
  Client client(c.proxy);
  client.send({"GET", "bar"});
  c.links.at(7000).answer("$1\r\nv\r\n");
  c.links.map.nodes[0].healthy = false;  // the cluster marked the primary failed
  client.send({"INCR", "bar"});
  client.send({"GET", "bar"});
  CHECK(client.reply_of(2).empty());
  CHECK(failure_of(client, 2).empty());
  CHECK(c.links.at(7000).sent.size() == 1);
  CHECK(held(c.links) == 2);
  c.links.run_later();  // still failing: they wait on
  CHECK(failure_of(client, 3).empty());
  // The map names the promoted replica, but requests of the slot are held: a new one queues
  // behind them rather than overtaking the INCR.
  promote_first_replica(c.links);
  client.send({"SET", "bar", "2"});
  CHECK_FALSE(c.links.used(7100));
  c.links.run_later();
  CHECK(c.links.at(7100).bytes() == std::vector<std::string>{wire({"INCR", "bar"}),
                                                             wire({"GET", "bar"}),
                                                             wire({"SET", "bar", "2"})});
  c.links.at(7100).answer(":8\r\n");
  c.links.at(7100).answer("$1\r\n8\r\n");
  c.links.at(7100).answer("+OK\r\n");
  CHECK(client.reply_of(2) == ":8\r\n");
  CHECK(client.reply_of(3) == "$1\r\n8\r\n");
  CHECK(client.reply_of(4) == "+OK\r\n");
  CHECK(held(c.links) == 0);
  CHECK(c.links.counters().holds.load() == 3);
  // The other shard was never held up.
  client.send({"GET", "foo"});
  CHECK(c.links.at(7001).bytes() == std::vector<std::string>{wire({"GET", "foo"})});
}

TEST_CASE("a held request gets the error once its hold expires", "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(300)));
  Client client(c.proxy);
  c.links.map.nodes[0].healthy = false;
  client.send({"GET", "bar"});
  c.links.run_later();  // 100 ms
  c.links.run_later();  // 200 ms
  CHECK(client.failure().empty());
  c.links.run_later();  // 300 ms: failover_hold is over
  CHECK(client.failure() == upstream::kErrPrimaryFailing);
  CHECK(c.links.counters().holds_expired.load() == 1);
  CHECK(held(c.links) == 0);
  CHECK(c.links.later.empty());
}

TEST_CASE("the hold lasts command_timeout when failover_hold is shorter", "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(0)));  // command_timeout is 200 ms
  Client client(c.proxy);
  c.links.map.nodes[0].healthy = false;
  client.send({"GET", "bar"});
  c.links.run_later();
  CHECK(client.failure().empty());
  c.links.run_later();
  CHECK(client.failure() == upstream::kErrPrimaryFailing);
}

TEST_CASE("the hold counts from arrival: a read that timed out has spent command_timeout",
          "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(0)));  // the hold is command_timeout, 200 ms
  Client client(c.proxy);
  client.send({"GET", "bar"});
  auto sent = c.links.at(7000).pending.front();
  c.links.at(7000).pending.pop_front();
  sent.target->on_error(sent.tag, upstream::ErrorKind::timeout, "ERR timed out");
  CHECK(client.failure() == "ERR timed out");
  CHECK(c.links.counters().holds_expired.load() == 1);
  CHECK(c.links.later.empty());
}

TEST_CASE("past failover_hold_max held requests, the next one gets the error at once",
          "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(5000), 1));
  Client client(c.proxy);
  c.links.map.nodes[0].healthy = false;
  client.send({"GET", "bar"});
  CHECK(client.failure().empty());
  client.send({"GET", "baz"});
  CHECK(client.failure() == upstream::kErrPrimaryFailing);
  CHECK(c.links.counters().holds_refused.load() == 1);
  CHECK(held(c.links) == 1);
  promote_first_replica(c.links);
  c.links.run_later();
  c.links.at(7100).answer("$1\r\nv\r\n");
  CHECK(client.reply_of(1) == "$1\r\nv\r\n");
  CHECK(held(c.links) == 0);
}

TEST_CASE("an unreachable node: reads in flight are sent again, writes in flight fail",
          "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(5000)));
  Client client(c.proxy);
  client.send({"GET", "bar"});
  client.send({"SET", "bar", "1"});
  client.send({"GET", "baz"});
  auto& dead = c.links.at(7000);
  REQUIRE(dead.pending.size() == 3);
  // The connection dies with the three in flight (the connection fails them in order).
  while (!dead.pending.empty()) {
    auto lost = dead.pending.front();
    dead.pending.pop_front();
    lost.target->on_error(lost.tag, upstream::ErrorKind::connection_lost,
                          upstream::kErrConnectionLost);
  }
  CHECK(failure_of(client, 1).empty());
  CHECK(failure_of(client, 2) == upstream::kErrConnectionLost);
  CHECK(failure_of(client, 3).empty());
  CHECK(c.links.counters().unknown_fate_writes.load() == 1);
  // Reconnecting fails (nothing is sent): new requests wait as well, even writes.
  dead.refuse = true;
  client.send({"SET", "baz", "2"});
  CHECK(failure_of(client, 4).empty());
  c.links.run_later();
  CHECK(dead.sent.size() == 3);
  dead.refuse = false;  // the node is back (or the map names its successor)
  c.links.run_later();
  CHECK(dead.bytes() == std::vector<std::string>{wire({"GET", "bar"}), wire({"SET", "bar", "1"}),
                                                 wire({"GET", "baz"}), wire({"GET", "bar"}),
                                                 wire({"GET", "baz"}), wire({"SET", "baz", "2"})});
  dead.answer("$1\r\na\r\n");
  dead.answer("$1\r\nb\r\n");
  dead.answer("+OK\r\n");
  CHECK(client.reply_of(1) == "$1\r\na\r\n");
  CHECK(client.reply_of(3) == "$1\r\nb\r\n");
  CHECK(client.reply_of(4) == "+OK\r\n");
  // A write that timed out may have run too.
  client.send({"INCR", "bar"});
  auto timed_out = dead.pending.front();
  dead.pending.pop_front();
  timed_out.target->on_error(timed_out.tag, upstream::ErrorKind::timeout, "ERR timed out");
  CHECK(client.failure() == "ERR timed out");
  CHECK(c.links.counters().unknown_fate_writes.load() == 2);
  CHECK(held(c.links) == 0);
}

TEST_CASE("CLUSTERDOWN replies are waited out in the hold (nothing ran)", "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(5000)));
  Client client(c.proxy);
  client.send({"INCR", "foo"});
  c.links.at(7001).answer("-CLUSTERDOWN The cluster is down\r\n");
  CHECK(client.reply().empty());
  for (int i = 0; i < 10; ++i) {
    c.links.run_later();
    c.links.at(7001).answer("-CLUSTERDOWN The cluster is down\r\n");
  }
  CHECK(client.reply().empty());
  c.links.run_later();
  c.links.at(7001).answer(":1\r\n");
  CHECK(client.reply() == ":1\r\n");
  CHECK(c.links.counters().holds.load() == 1);
  CHECK(held(c.links) == 0);
}

TEST_CASE("closing the thread's connections answers what is held", "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(5000)));
  Client client(c.proxy);
  c.links.map.nodes[0].healthy = false;
  client.send({"GET", "bar"});
  c.links.held().close();
  CHECK(client.failure() == upstream::kErrClosed);
  CHECK(held(c.links) == 0);
  c.links.run_later();  // the retry pass finds nothing to send
  CHECK_FALSE(c.links.used(7000));
}

TEST_CASE("a session link for a failing primary's slot waits for the promoted replica",
          "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(60000)));
  c.links.map.nodes[0].healthy = false;
  Client blocking(c.proxy);
  CHECK(blocking.send({"BLPOP", "bar", "0"}) == session::Action::wait_then_retry);
  Client transaction(c.proxy);
  transaction.send({"MULTI"});
  CHECK(transaction.reply() == "+OK\r\n");
  CHECK(transaction.send({"SET", "bar", "1"}) == session::Action::wait_then_retry);
  CHECK(c.links.dedicated.empty());  // no link to the dying primary
  CHECK(blocking.retry({"BLPOP", "bar", "0"}) == session::Action::wait_then_retry);

  promote_first_replica(c.links);
  CHECK(blocking.retry({"BLPOP", "bar", "0"}) == session::Action::done);
  CHECK(transaction.retry({"SET", "bar", "1"}) == session::Action::done);
  REQUIRE(c.links.dedicated.size() == 2);
  CHECK(c.links.dedicated[0].first == 7100);
  CHECK(c.links.dedicated[0].second->bytes() ==
        std::vector<std::string>{wire({"BLPOP", "bar", "0"})});
  CHECK(c.links.dedicated[1].first == 7100);
  CHECK(c.links.dedicated[1].second->bytes() ==
        std::vector<std::string>{wire({"MULTI"}), wire({"SET", "bar", "1"})});
}

TEST_CASE("before the first slot map a keyless session link waits for the map", "[cluster][hold]") {
  ClusterProxy c(hold_settings(milliseconds(60000)));
  const upstream::SlotMap map = c.links.map;
  c.links.map = upstream::SlotMap{};  // Corral has just started
  Client subscriber(c.proxy);
  CHECK(subscriber.send({"SUBSCRIBE", "news"}) == session::Action::wait_then_retry);
  CHECK(subscriber.failure().empty());
  CHECK(c.links.dedicated.empty());
  CHECK_FALSE(c.links.refreshes.empty());

  c.links.map = map;
  CHECK(subscriber.retry({"SUBSCRIBE", "news"}) == session::Action::done);
  REQUIRE(c.links.dedicated.size() == 1);
  CHECK(c.links.dedicated[0].second->bytes().front() == wire({"SUBSCRIBE", "news"}));
}

TEST_CASE("without a failover hold a session link for a failing slot is refused at once",
          "[cluster][hold]") {
  REQUIRE(kKeysAsExpected);
  ClusterProxy c(hold_settings(milliseconds(0)));
  c.links.map.nodes[0].healthy = false;
  Client blocking(c.proxy);
  CHECK(blocking.send({"BLPOP", "bar", "0"}) == session::Action::done);
  CHECK_FALSE(blocking.failure().empty());
  Client transaction(c.proxy);
  transaction.send({"MULTI"});
  CHECK(transaction.send({"SET", "bar", "1"}) == session::Action::done);
  CHECK(transaction.failure() == upstream::kErrPrimaryFailing);
  transaction.send({"EXEC"});
  CHECK(transaction.reply().starts_with("-EXECABORT"));
  CHECK(c.links.dedicated.empty());
}

TEST_CASE("a fan-out's part for a failing primary waits for the promoted replica",
          "[cluster][hold]") {
  ClusterProxy c(hold_settings(milliseconds(5000)));
  Client client(c.proxy);
  c.links.map.nodes[0].healthy = false;
  client.send({"DBSIZE"});
  CHECK_FALSE(c.links.used(7000));
  c.links.at(7001).answer(":4\r\n");
  CHECK(client.reply().empty());  // the failing shard's count is still to come
  CHECK(client.failure().empty());
  promote_first_replica(c.links);
  c.links.run_later();
  CHECK(c.links.at(7100).bytes() == std::vector<std::string>{wire({"DBSIZE"})});
  c.links.at(7100).answer(":3\r\n");
  CHECK(client.reply() == ":7\r\n");
}

}  // namespace corral::proxy::test
