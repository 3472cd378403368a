// The cluster's slot map as Corral routes by it: its nodes (primaries and replicas) and, per hash
// slot, the primary that owns it; parsed from CLUSTER SHARDS (Redis >= 7) or CLUSTER SLOTS.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.hpp"

namespace corral::upstream {

struct ClusterNode {
  std::string id;  // the node's cluster id ("" when a MOVED named a node no map listed yet)
  config::Endpoint endpoint;
  bool primary = false;
  bool healthy = true;     // CLUSTER SHARDS' health is not "failed" (SLOTS cannot tell)
  int primary_index = -1;  // replicas: index of their primary in SlotMap::nodes
};

// A plain value: the topology publishes it immutable (shared_ptr<const>), each io thread keeps a
// mutable copy that MOVED replies patch until the next refresh.
struct SlotMap {
  std::vector<ClusterNode> nodes;
  std::vector<std::int16_t> owner;  // kSlotCount entries: index into nodes, -1 when unserved
  std::vector<int> primaries;       // nodes owning slots, ordered by their first slot

  SlotMap();
  std::size_t slots_covered() const;
  // Index of the node at `endpoint`; appended as a primary when unknown (a MOVED target).
  int find_or_add(const config::Endpoint& endpoint);
  std::vector<int> replicas_of(int primary) const;
  // Two maps route alike: the same endpoint for every slot (ids and health aside).
  bool same_owners(const SlotMap& other) const;
};

// One flag per slot (kSlotCount of them).
using SlotSet = std::vector<bool>;

// The slots whose owning endpoint differs between the two maps: a failover or a reshard moved
// them, or they became served or unserved. The cache drops what it holds of exactly these.
SlotSet slots_changing_owner(const SlotMap& before, const SlotMap& after);
// The slots the node at `endpoint` owns in `map` (none when it is not a primary there).
SlotSet slots_owned_by(const SlotMap& map, const config::Endpoint& endpoint);

struct SlotMapParse {
  std::optional<SlotMap> map;
  std::string error;  // why `reply` is not a usable map
};

// `reply`: one complete RESP2 or RESP3 reply. `asked_host` stands in for an empty or "?" address
// (the node does not know its own address: it means the node that answered). `tls`: connect to
// tls-port where the reply gives one.
SlotMapParse parse_cluster_shards(std::string_view reply, std::string_view asked_host, bool tls);
SlotMapParse parse_cluster_slots(std::string_view reply, std::string_view asked_host);

}  // namespace corral::upstream
