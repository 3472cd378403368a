// Parsing of CLUSTER SHARDS and CLUSTER SLOTS replies into a SlotMap. Both are decoded into a
// resp::Reply tree: they are small, rare, and read off the data plane.
#include "upstream/cluster/slot_map.hpp"

#include <algorithm>
#include <charconv>

#include "resp/reply.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::upstream {

namespace {

using resp::Reply;

bool same_endpoint(const config::Endpoint& a, const config::Endpoint& b) {
  return a.port == b.port && a.host == b.host;
}

bool is_aggregate(const Reply& r) {
  return r.type == Reply::Type::array || r.type == Reply::Type::map || r.type == Reply::Type::set;
}

// The text of a string-like reply ("" otherwise).
std::string_view text_of(const Reply& r) {
  switch (r.type) {
    case Reply::Type::simple:
    case Reply::Type::bulk:
    case Reply::Type::verbatim:
      return r.text;
    default:
      return {};
  }
}

std::optional<std::int64_t> integer_of(const Reply& r) {
  if (r.type == Reply::Type::integer) return r.integer;
  const auto text = text_of(r);
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// A RESP2 flat key/value array or a RESP3 map: the value under `key`, if any.
const Reply* field(const Reply& map, std::string_view key) {
  if (!is_aggregate(map)) return nullptr;
  for (std::size_t i = 0; i + 1 < map.elements.size(); i += 2) {
    if (text_of(map.elements[i]) == key) return &map.elements[i + 1];
  }
  return nullptr;
}

bool valid_port(std::int64_t port) { return port > 0 && port <= 65535; }

// Fills the owners of [first, last] with `node`; false on a range outside the slot space.
bool assign(SlotMap& map, std::int64_t first, std::int64_t last, int node) {
  if (first < 0 || last < first || last >= static_cast<std::int64_t>(kSlotCount)) return false;
  std::fill(map.owner.begin() + first, map.owner.begin() + last + 1,
            static_cast<std::int16_t>(node));
  return true;
}

// Primaries ordered by the first slot they own; a primary owning nothing is left out.
void order_primaries(SlotMap& map) {
  std::vector<int> first(map.nodes.size(), -1);
  for (std::size_t slot = kSlotCount; slot-- > 0;) {
    if (map.owner[slot] >= 0) first[map.owner[slot]] = static_cast<int>(slot);
  }
  map.primaries.clear();
  for (std::size_t i = 0; i < map.nodes.size(); ++i) {
    if (first[i] >= 0) map.primaries.push_back(static_cast<int>(i));
  }
  std::sort(map.primaries.begin(), map.primaries.end(),
            [&first](int a, int b) { return first[a] < first[b]; });
}

SlotMapParse failed(std::string error) { return {std::nullopt, std::move(error)}; }

SlotMapParse finished(SlotMap map) {
  order_primaries(map);
  if (map.primaries.empty()) return failed("the reply assigns no slot to any node");
  return {std::move(map), {}};
}

struct ShardNode {
  ClusterNode node;
  bool is_primary = false;
};

std::optional<ShardNode> shard_node(const Reply& r, std::string_view asked_host, bool tls) {
  ShardNode out;
  const Reply* id = field(r, "id");
  const Reply* endpoint = field(r, "endpoint");
  const Reply* ip = field(r, "ip");
  const Reply* port = field(r, tls && field(r, "tls-port") ? "tls-port" : "port");
  const Reply* role = field(r, "role");
  if (id == nullptr || port == nullptr || role == nullptr) return std::nullopt;
  const auto port_number = integer_of(*port);
  if (!port_number || !valid_port(*port_number)) return std::nullopt;
  std::string_view host = endpoint ? text_of(*endpoint) : std::string_view();
  if ((host.empty() || host == "?") && ip != nullptr) host = text_of(*ip);
  if (host.empty() || host == "?") host = asked_host;
  out.node.id = std::string(text_of(*id));
  out.node.endpoint = {std::string(host), static_cast<std::uint16_t>(*port_number)};
  out.is_primary = text_of(*role) == "master";
  const Reply* health = field(r, "health");
  // "online", "loading" or "fail" (7.0; the docs say "failed"): only a failed node is skipped,
  // a loading one answers soon.
  const auto state = health ? text_of(*health) : std::string_view("online");
  out.node.healthy = state != "fail" && state != "failed";
  return out;
}

}  // namespace

SlotMap::SlotMap() : owner(kSlotCount, -1) {}

std::size_t SlotMap::slots_covered() const {
  return static_cast<std::size_t>(
      std::count_if(owner.begin(), owner.end(), [](std::int16_t o) { return o >= 0; }));
}

int SlotMap::find_or_add(const config::Endpoint& endpoint) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (same_endpoint(nodes[i].endpoint, endpoint)) return static_cast<int>(i);
  }
  ClusterNode node;
  node.endpoint = endpoint;
  node.primary = true;
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size() - 1);
}

std::vector<int> SlotMap::replicas_of(int primary) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].primary_index == primary) out.push_back(static_cast<int>(i));
  }
  return out;
}

bool SlotMap::same_owners(const SlotMap& other) const {
  for (std::size_t slot = 0; slot < kSlotCount; ++slot) {
    const int a = owner[slot];
    const int b = other.owner[slot];
    if ((a < 0) != (b < 0)) return false;
    if (a >= 0 && !same_endpoint(nodes[a].endpoint, other.nodes[b].endpoint)) return false;
  }
  return true;
}

SlotSet slots_changing_owner(const SlotMap& before, const SlotMap& after) {
  SlotSet changed(kSlotCount, false);
  for (std::size_t slot = 0; slot < kSlotCount; ++slot) {
    const int a = before.owner[slot];
    const int b = after.owner[slot];
    if ((a < 0) != (b < 0)) {
      changed[slot] = true;
    } else if (a >= 0) {
      changed[slot] = !same_endpoint(before.nodes[a].endpoint, after.nodes[b].endpoint);
    }
  }
  return changed;
}

SlotSet slots_owned_by(const SlotMap& map, const config::Endpoint& endpoint) {
  SlotSet owned(kSlotCount, false);
  for (std::size_t slot = 0; slot < kSlotCount; ++slot) {
    const int owner = map.owner[slot];
    owned[slot] = owner >= 0 && same_endpoint(map.nodes[owner].endpoint, endpoint);
  }
  return owned;
}

// [ {slots: [first, last, ...], nodes: [ {id, port, ip, endpoint, role, health ...} ...]} ... ]
SlotMapParse parse_cluster_shards(std::string_view reply, std::string_view asked_host, bool tls) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded) return failed("not one complete RESP reply");
  if (decoded->type == Reply::Type::error) return failed(decoded->text);
  if (decoded->type != Reply::Type::array) return failed("expected an array of shards");
  SlotMap map;
  for (const Reply& shard : decoded->elements) {
    const Reply* slots = field(shard, "slots");
    const Reply* nodes = field(shard, "nodes");
    if (slots == nullptr || nodes == nullptr || !is_aggregate(*slots) || !is_aggregate(*nodes))
      return failed("a shard without slots and nodes");
    if (slots->elements.size() % 2 != 0) return failed("a shard's slots are not pairs");
    const std::size_t first_node = map.nodes.size();
    int primary = -1;
    for (const Reply& entry : nodes->elements) {
      auto parsed = shard_node(entry, asked_host, tls);
      if (!parsed) return failed("a shard node without id, port or role");
      parsed->node.primary = parsed->is_primary;
      // After a failover the dead primary stays listed as a failed master: the healthy one wins.
      if (parsed->is_primary && (primary < 0 || !map.nodes[primary].healthy))
        primary = static_cast<int>(map.nodes.size());
      map.nodes.push_back(std::move(parsed->node));
    }
    for (std::size_t i = first_node; i < map.nodes.size(); ++i) {
      if (static_cast<int>(i) != primary) {
        map.nodes[i].primary = false;
        map.nodes[i].primary_index = primary;
      }
    }
    if (slots->elements.empty()) continue;
    if (primary < 0) return failed("a shard with slots but no primary");
    for (std::size_t i = 0; i < slots->elements.size(); i += 2) {
      const auto first = integer_of(slots->elements[i]);
      const auto last = integer_of(slots->elements[i + 1]);
      if (!first || !last || !assign(map, *first, *last, primary))
        return failed("a slot range outside 0..16383");
    }
  }
  return finished(std::move(map));
}

// [ [first, last, [ip, port, id, ...] (primary), [ip, port, id, ...] (replicas) ...] ... ]
SlotMapParse parse_cluster_slots(std::string_view reply, std::string_view asked_host) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded) return failed("not one complete RESP reply");
  if (decoded->type == Reply::Type::error) return failed(decoded->text);
  if (decoded->type != Reply::Type::array) return failed("expected an array of slot ranges");
  SlotMap map;
  for (const Reply& range : decoded->elements) {
    if (range.type != Reply::Type::array || range.elements.size() < 3)
      return failed("a slot range without a primary");
    int primary = -1;
    for (std::size_t i = 2; i < range.elements.size(); ++i) {
      const Reply& node = range.elements[i];
      if (node.type != Reply::Type::array || node.elements.size() < 2)
        return failed("a node without address and port");
      const auto port = integer_of(node.elements[1]);
      if (!port || !valid_port(*port)) return failed("a node with a bad port");
      std::string_view host = text_of(node.elements[0]);
      if (host.empty() || host == "?") host = asked_host;
      const int index = map.find_or_add({std::string(host), static_cast<std::uint16_t>(*port)});
      if (node.elements.size() >= 3) map.nodes[index].id = std::string(text_of(node.elements[2]));
      if (i == 2) {
        primary = index;
      } else {
        map.nodes[index].primary = false;
        map.nodes[index].primary_index = primary;
      }
    }
    const auto first = integer_of(range.elements[0]);
    const auto last = integer_of(range.elements[1]);
    if (!first || !last || !assign(map, *first, *last, primary))
      return failed("a slot range outside 0..16383");
  }
  return finished(std::move(map));
}

}  // namespace corral::upstream
