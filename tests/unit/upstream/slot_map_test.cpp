// Slot maps from real CLUSTER SHARDS / CLUSTER SLOTS replies of redis-server 7.0.15 (a 3 primary +
// 3 replica cluster from scripts/cluster.sh, before and after `kill -9` of the first primary), and
// the refusals of replies that are not maps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "upstream/cluster/key_slot.hpp"
#include "upstream/cluster/slot_map.hpp"

using namespace corral::upstream;

namespace {

std::string data(const std::string& name) {
  std::ifstream in(std::string(CORRAL_SOURCE_DIR) + "/tests/unit/upstream/data/" + name,
                   std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const ClusterNode& owner_of(const SlotMap& map, std::size_t slot) {
  REQUIRE(map.owner[slot] >= 0);
  return map.nodes[map.owner[slot]];
}

}  // namespace

TEST_CASE("CLUSTER SHARDS of a healthy 3x1 cluster", "[upstream][cluster]") {
  const auto parsed = parse_cluster_shards(data("cluster_shards_3x1.resp"), "127.0.0.1", false);
  INFO(parsed.error);
  REQUIRE(parsed.map);
  const SlotMap& map = *parsed.map;
  CHECK(map.nodes.size() == 6);
  CHECK(map.slots_covered() == kSlotCount);
  REQUIRE(map.primaries.size() == 3);
  CHECK(map.nodes[map.primaries[0]].endpoint.port == 10034);  // owns 0..5460
  CHECK(map.nodes[map.primaries[1]].endpoint.port == 16289);  // 5461..10922
  CHECK(map.nodes[map.primaries[2]].endpoint.port == 10535);  // 10923..16383
  CHECK(owner_of(map, 0).endpoint.port == 10034);
  CHECK(owner_of(map, 5460).endpoint.port == 10034);
  CHECK(owner_of(map, 5461).endpoint.port == 16289);
  CHECK(owner_of(map, 16383).endpoint.port == 10535);
  CHECK(owner_of(map, key_slot("foo")).endpoint.port == 10535);  // slot 12182
  CHECK(owner_of(map, 0).id == "3ef5e88b76f5befdb4f081c929b588d073d91f63");
  for (int primary : map.primaries) {
    CHECK(map.nodes[primary].primary);
    CHECK(map.nodes[primary].healthy);
    const auto replicas = map.replicas_of(primary);
    REQUIRE(replicas.size() == 1);
    CHECK_FALSE(map.nodes[replicas[0]].primary);
    CHECK(map.nodes[replicas[0]].endpoint.host == "127.0.0.1");
  }
}

TEST_CASE("CLUSTER SHARDS after a failover: the promoted replica owns the slots",
          "[upstream][cluster]") {
  const auto before = parse_cluster_shards(data("cluster_shards_3x1.resp"), "h", false);
  const auto after = parse_cluster_shards(data("cluster_shards_failed_over.resp"), "h", false);
  REQUIRE(before.map);
  REQUIRE(after.map);
  CHECK(after.map->slots_covered() == kSlotCount);
  CHECK(owner_of(*after.map, 0).endpoint.port == 21442);  // the dead 10034's replica
  CHECK(owner_of(*after.map, 0).healthy);
  CHECK(owner_of(*after.map, 5461).endpoint.port == 16289);
  CHECK(after.map->primaries.size() == 3);
  // The dead primary is still listed, as a failed master of a shard without slots.
  const auto dead = std::find_if(after.map->nodes.begin(), after.map->nodes.end(),
                                 [](const ClusterNode& n) { return n.endpoint.port == 10034; });
  REQUIRE(dead != after.map->nodes.end());
  CHECK_FALSE(dead->healthy);
  CHECK_FALSE(before.map->same_owners(*after.map));
  CHECK(before.map->same_owners(*before.map));
}

TEST_CASE("a failover changes the owner of the dead primary's slots only", "[upstream][cluster]") {
  const auto before = parse_cluster_shards(data("cluster_shards_3x1.resp"), "h", false);
  const auto after = parse_cluster_shards(data("cluster_shards_failed_over.resp"), "h", false);
  REQUIRE(before.map);
  REQUIRE(after.map);
  const SlotSet moved = slots_changing_owner(*before.map, *after.map);
  REQUIRE(moved.size() == kSlotCount);
  CHECK(std::count(moved.begin(), moved.end(), true) == 5461);  // 0..5460, 10034's
  CHECK(moved[0]);
  CHECK(moved[5460]);
  CHECK_FALSE(moved[5461]);
  CHECK_FALSE(moved[16383]);
  const SlotSet none = slots_changing_owner(*after.map, *after.map);
  CHECK(std::count(none.begin(), none.end(), true) == 0);
  // One slot resharded to another primary: that slot alone.
  SlotMap resharded = *before.map;
  resharded.owner[100] = static_cast<std::int16_t>(before.map->owner[16000]);
  const SlotSet one = slots_changing_owner(*before.map, resharded);
  CHECK(std::count(one.begin(), one.end(), true) == 1);
  CHECK(one[100]);
  // An unserved slot counts as changed.
  resharded.owner[200] = -1;
  CHECK(slots_changing_owner(*before.map, resharded)[200]);
}

TEST_CASE("slots_owned_by lists a primary's slots and none of a replica", "[upstream][cluster]") {
  const auto parsed = parse_cluster_shards(data("cluster_shards_3x1.resp"), "h", false);
  REQUIRE(parsed.map);
  const SlotMap& map = *parsed.map;
  const auto& second = map.nodes[map.primaries[1]].endpoint;  // 5461..10922
  const SlotSet owned = slots_owned_by(map, second);
  CHECK(std::count(owned.begin(), owned.end(), true) == 10922 - 5461 + 1);
  CHECK(owned[5461]);
  CHECK_FALSE(owned[5460]);
  const auto replica = map.replicas_of(map.primaries[1]).front();
  const SlotSet none = slots_owned_by(map, map.nodes[replica].endpoint);
  CHECK(std::count(none.begin(), none.end(), true) == 0);
}

TEST_CASE("CLUSTER SLOTS gives the same owners as CLUSTER SHARDS", "[upstream][cluster]") {
  const auto shards = parse_cluster_shards(data("cluster_shards_3x1.resp"), "h", false);
  const auto slots = parse_cluster_slots(data("cluster_slots_3x1.resp"), "h");
  INFO(slots.error);
  REQUIRE(slots.map);
  REQUIRE(shards.map);
  CHECK(slots.map->slots_covered() == kSlotCount);
  CHECK(slots.map->same_owners(*shards.map));
  const auto failed_over = parse_cluster_slots(data("cluster_slots_failed_over.resp"), "h");
  REQUIRE(failed_over.map);
  CHECK(owner_of(*failed_over.map, 100).endpoint.port == 21442);
}

TEST_CASE("an empty address in CLUSTER SLOTS means the node that answered", "[upstream][cluster]") {
  const std::string reply = "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$0\r\n\r\n:7000\r\n$2\r\nid\r\n";
  const auto parsed = parse_cluster_slots(reply, "seed.local");
  REQUIRE(parsed.map);
  CHECK(owner_of(*parsed.map, 42).endpoint.host == "seed.local");
  CHECK(owner_of(*parsed.map, 42).endpoint.port == 7000);
}

TEST_CASE("replies that are not slot maps are refused with a reason", "[upstream][cluster]") {
  CHECK(parse_cluster_shards("-ERR This instance has cluster support disabled\r\n", "h", false)
            .error == "ERR This instance has cluster support disabled");
  CHECK(parse_cluster_shards("*0\r\n", "h", false).error ==
        "the reply assigns no slot to any node");
  CHECK(parse_cluster_shards("*1\r\n", "h", false).error == "not one complete RESP reply");
  CHECK(parse_cluster_slots("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\na\r\n:1\r\n", "h").error ==
        "a slot range outside 0..16383");
  CHECK(parse_cluster_slots("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:0\r\n", "h").error ==
        "a node with a bad port");
  CHECK(parse_cluster_slots(":1\r\n", "h").error == "expected an array of slot ranges");
}

TEST_CASE("a MOVED target unknown to the map is added as a primary", "[upstream][cluster]") {
  SlotMap map;
  const int a = map.find_or_add({"10.0.0.1", 7000});
  CHECK(map.find_or_add({"10.0.0.1", 7000}) == a);
  const int b = map.find_or_add({"10.0.0.2", 7000});
  CHECK(a != b);
  CHECK(map.nodes[b].primary);
}
