// CORRAL.CLUSTER and INFO's cluster section, both read from this io thread's routing view.
#include "upstream/cluster/cluster_admin.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "config/values.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::upstream {

namespace {

// "0-5460,6000" for the slots `node` owns.
std::string slot_ranges(const SlotMap& map, int node) {
  std::string out;
  std::size_t slot = 0;
  while (slot < kSlotCount) {
    if (map.owner[slot] != node) {
      ++slot;
      continue;
    }
    const std::size_t first = slot;
    while (slot < kSlotCount && map.owner[slot] == node) ++slot;
    if (!out.empty()) out += ',';
    out += first + 1 == slot ? std::to_string(first) : fmt::format("{}-{}", first, slot - 1);
  }
  return out;
}

std::string_view role(const SlotMap& map, int node) {
  if (!map.nodes[node].primary) return "replica";
  return slot_ranges(map, node).empty() ? "primary-without-slots" : "primary";
}

}  // namespace

void append_cluster_report(std::string& reply, ClusterLinks& links) {
  const auto& map = links.routes();
  const auto& counters = links.counters();
  resp::append_array_header(reply, 14);
  resp::append_field(reply, "slots_served", static_cast<std::int64_t>(map.slots_covered()));
  resp::append_field(reply, "primaries", static_cast<std::int64_t>(map.primaries.size()));
  resp::append_field(reply, "topology_refreshes",
                     static_cast<std::int64_t>(counters.refreshes.load()));
  resp::append_field(reply, "moved", static_cast<std::int64_t>(counters.redirects[0].load()));
  resp::append_field(reply, "ask", static_cast<std::int64_t>(counters.redirects[1].load()));
  resp::append_field(reply, "crossslot_refused",
                     static_cast<std::int64_t>(counters.crossslot_refused));
  resp::append_bulk(reply, "nodes");
  resp::append_array_header(reply, map.nodes.size());
  for (std::size_t i = 0; i < map.nodes.size(); ++i) {
    const auto& node = map.nodes[i];
    const int index = static_cast<int>(i);
    resp::append_array_header(reply, 12);
    resp::append_field(reply, "address", config::format_endpoint(node.endpoint));
    resp::append_field(reply, "id", node.id);
    resp::append_field(reply, "role", role(map, index));
    resp::append_field(reply, "health", node.healthy ? "online" : "failing");
    resp::append_field(reply, "slots", slot_ranges(map, index));
    resp::append_field(reply, "connections",
                       static_cast<std::int64_t>(links.node_connections(index)));
  }
}

namespace {

// What a DBSIZE probe learned of one node; nullopt: not asked (a replica) or no answer.
struct NodeProbe {
  bool asked = false;
  std::optional<std::int64_t> keys;
};

void append_node_lines(std::string& out, const SlotMap& map, ClusterLinks& links,
                       const std::vector<NodeProbe>& probes) {
  out += "# ClusterNodes\r\n";
  out += fmt::format("corral_cluster_primaries:{}\r\ncorral_cluster_slots_served:{}\r\n",
                     map.primaries.size(), map.slots_covered());
  for (std::size_t i = 0; i < map.nodes.size(); ++i) {
    const int index = static_cast<int>(i);
    out += fmt::format("node{}:address={},role={},health={},slots={},connections={}", i,
                       config::format_endpoint(map.nodes[i].endpoint), role(map, index),
                       map.nodes[i].healthy ? "online" : "failing", slot_ranges(map, index),
                       links.node_connections(index));
    if (i < probes.size() && probes[i].asked) {
      const auto& keys = probes[i].keys;
      out += fmt::format(",connected={},keys={}", keys ? "yes" : "no",
                         keys ? std::to_string(*keys) : std::string("?"));
    }
    out += "\r\n";
  }
}

// Gathers the primaries' DBSIZE replies (all on this io thread, so no lock) and answers INFO
// once the last one is in.
class NodeSummary final : public ReplyTarget, public std::enable_shared_from_this<NodeSummary> {
 public:
  NodeSummary(ClusterLinks& links, std::string sections, std::shared_ptr<ReplyTarget> client,
              std::uint64_t client_tag)
      : links_(links),
        map_(links.routes()),
        sections_(std::move(sections)),
        client_(std::move(client)),
        client_tag_(client_tag),
        probes_(map_.nodes.size()) {}

  void probe(std::size_t affinity) {
    static constexpr std::string_view kDbsize = "*1\r\n$6\r\nDBSIZE\r\n";
    for (int primary : map_.primaries) probes_[primary].asked = true;
    pending_ = map_.primaries.size() + 1;  // + 1: no answer completes before every send is made
    for (int primary : map_.primaries) {
      auto& link = links_.node_link(primary, affinity, 2);
      if (!link.send(kDbsize, shared_from_this(), static_cast<std::uint64_t>(primary))) {
        on_failure(static_cast<std::uint64_t>(primary), {});
      }
    }
    settle();
  }

  void on_reply(std::uint64_t node, std::string_view reply) override {
    const auto decoded = resp::decode_reply(reply);
    if (decoded && decoded->type == resp::Reply::Type::integer) {
      probes_[node].keys = decoded->integer;
    }
    settle();
  }
  void on_failure(std::uint64_t, std::string_view) override { settle(); }

 private:
  void settle() {
    if (--pending_ != 0) return;
    std::string text = std::move(sections_);
    if (!text.empty() && !text.ends_with("\r\n\r\n")) text += "\r\n";
    append_node_lines(text, map_, links_, probes_);
    std::string out;
    resp::append_bulk(out, text);
    client_->on_reply(client_tag_, out);
  }

  ClusterLinks& links_;
  const SlotMap map_;  // the nodes as they were asked: replies name them by index
  std::string sections_;
  std::shared_ptr<ReplyTarget> client_;
  std::uint64_t client_tag_;
  std::vector<NodeProbe> probes_;
  std::size_t pending_ = 0;
};

}  // namespace

void append_cluster_info(std::string& out, ClusterLinks& links) {
  append_node_lines(out, links.routes(), links, {});
}

void answer_cluster_info(ClusterLinks& links, std::string sections, std::size_t affinity,
                         const std::shared_ptr<ReplyTarget>& client, std::uint64_t tag) {
  std::make_shared<NodeSummary>(links, std::move(sections), client, tag)->probe(affinity);
}

}  // namespace corral::upstream
