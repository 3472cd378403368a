// Tests which replica of a slot's primary a cluster read or cache fill goes to by the polled
// offsets (ClusterReplicaReads): health, max_replica_lag's verdict, the replica's own primary,
// and a fill's wait for a poll after the tracking link's last message.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>

#include "upstream/cluster/cluster_replica_reads.hpp"
#include "upstream/replica_view.hpp"

using namespace corral::upstream;
using Place = ClusterReplicaReads::Place;
using Clock = std::chrono::steady_clock;

namespace {
// Node 0: the primary a:1 (owns slot 0), nodes 1 and 2 its replicas b:1 and c:1.
SlotMap one_shard() {
  SlotMap map;
  map.nodes = {{"p", {"a", 1}, true, true, -1},
               {"r1", {"b", 1}, false, true, 0},
               {"r2", {"c", 1}, false, true, 0}};
  map.owner[0] = 0;
  map.primaries = {0};
  return map;
}
}  // namespace

TEST_CASE("cluster reads: only replicas the poller published, of this primary",
          "[upstream][replica]") {
  auto view = std::make_shared<ReplicaView>();
  ClusterReplicaReads reads(view, true);
  auto map = one_shard();
  CHECK(reads.pick(map, 0, 0).place == Place::no_usable_replica);  // nothing polled yet
  // c:1 is listed as another primary's replica: its offset says nothing of a:1's stream.
  view->publish_replicas({{{"b", 1}, 100, "a:1"}, {{"c", 1}, 100, "z:1"}});
  for (std::size_t client = 0; client < 4; ++client) {
    const auto pick = reads.pick(map, 0, client);
    REQUIRE(pick.place == Place::replica);
    CHECK(pick.node == 1);
  }
  map.nodes[1].healthy = false;  // failed in the map: not used whatever its offset
  CHECK(reads.pick(map, 0, 0).place == Place::no_usable_replica);
}

TEST_CASE("cluster fills: a replica only once a poll after the last message shows it caught up",
          "[upstream][replica]") {
  auto view = std::make_shared<ReplicaView>();
  ClusterReplicaReads reads(view, true);
  const auto map = one_shard();
  view->publish_replicas({{{"b", 1}, 100, "a:1"}, {{"c", 1}, 150, "a:1"}});
  const auto before = Clock::now();
  view->finish_primary_poll("a:1", view->begin_primary_poll(), 90, before);
  const auto seen = before + std::chrono::milliseconds(1);  // the message came after that poll
  CHECK(reads.pick_fill(map, 0, seen) == -1);               // no poll since: the primary
  view->finish_primary_poll("a:1", view->begin_primary_poll(), 140,
                            seen + std::chrono::milliseconds(1));
  for (int i = 0; i < 3; ++i) CHECK(reads.pick_fill(map, 0, seen) == 2);  // b:1 is behind 140
  view->publish_replicas({{{"b", 1}, 100, "a:1"}, {{"c", 1}, 130, "a:1"}});
  CHECK(reads.pick_fill(map, 0, seen) == -1);
}
