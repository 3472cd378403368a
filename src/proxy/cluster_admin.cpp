// CORRAL.CLUSTER and INFO's cluster section, both read from this io thread's routing view.
#include "proxy/cluster_admin.hpp"

#include <fmt/format.h>

#include "proxy/cluster_router.hpp"
#include "resp/encoder.hpp"
#include "upstream/cluster_links.hpp"
#include "upstream/key_slot.hpp"

namespace corral::proxy {

namespace {

// "0-5460,6000" for the slots `node` owns.
std::string slot_ranges(const upstream::SlotMap& map, int node) {
  std::string out;
  std::size_t slot = 0;
  while (slot < upstream::kSlotCount) {
    if (map.owner[slot] != node) {
      ++slot;
      continue;
    }
    const std::size_t first = slot;
    while (slot < upstream::kSlotCount && map.owner[slot] == node) ++slot;
    if (!out.empty()) out += ',';
    out += first + 1 == slot ? std::to_string(first) : fmt::format("{}-{}", first, slot - 1);
  }
  return out;
}

std::string address(const config::Endpoint& e) { return fmt::format("{}:{}", e.host, e.port); }

std::string_view role(const upstream::SlotMap& map, int node) {
  if (!map.nodes[node].primary) return "replica";
  return slot_ranges(map, node).empty() ? "primary-without-slots" : "primary";
}

}  // namespace

Action corral_cluster(LocalCall& call) {
  if (!call.client.admin) {
    resp::append_error(call.reply,
                       "NOPERM CORRAL admin commands need AUTH with client.admin_password");
    return Action::done;
  }
  if (call.cluster == nullptr) {
    resp::append_error(call.reply, "ERR the upstream is not a Redis Cluster");
    return Action::done;
  }
  auto& links = call.cluster->links();
  const auto& map = links.routes();
  const auto& counters = links.counters();
  resp::append_array_header(call.reply, 14);
  resp::append_field(call.reply, "slots_served", static_cast<std::int64_t>(map.slots_covered()));
  resp::append_field(call.reply, "primaries", static_cast<std::int64_t>(map.primaries.size()));
  resp::append_field(call.reply, "topology_refreshes",
                     static_cast<std::int64_t>(counters.refreshes.load()));
  resp::append_field(call.reply, "moved", static_cast<std::int64_t>(counters.redirects[0].load()));
  resp::append_field(call.reply, "ask", static_cast<std::int64_t>(counters.redirects[1].load()));
  resp::append_field(call.reply, "crossslot_refused",
                     static_cast<std::int64_t>(counters.crossslot_refused));
  resp::append_bulk(call.reply, "nodes");
  resp::append_array_header(call.reply, map.nodes.size());
  for (std::size_t i = 0; i < map.nodes.size(); ++i) {
    const auto& node = map.nodes[i];
    const int index = static_cast<int>(i);
    resp::append_array_header(call.reply, 12);
    resp::append_field(call.reply, "address", address(node.endpoint));
    resp::append_field(call.reply, "id", node.id);
    resp::append_field(call.reply, "role", role(map, index));
    resp::append_field(call.reply, "health", node.healthy ? "online" : "failing");
    resp::append_field(call.reply, "slots", slot_ranges(map, index));
    resp::append_field(call.reply, "connections",
                       static_cast<std::int64_t>(links.node_connections(index)));
  }
  return Action::done;
}

void append_cluster_info(std::string& out, upstream::ClusterLinks& links) {
  const auto& map = links.routes();
  out += "# ClusterNodes\r\n";
  out += fmt::format("corral_cluster_primaries:{}\r\ncorral_cluster_slots_served:{}\r\n",
                     map.primaries.size(), map.slots_covered());
  for (std::size_t i = 0; i < map.nodes.size(); ++i) {
    const int index = static_cast<int>(i);
    out += fmt::format("node{}:address={},role={},health={},slots={},connections={}\r\n", i,
                       address(map.nodes[i].endpoint), role(map, index),
                       map.nodes[i].healthy ? "online" : "failing", slot_ranges(map, index),
                       links.node_connections(index));
  }
}

}  // namespace corral::proxy
