// CORRAL.CLUSTER and INFO's cluster section, both read from this io thread's routing view.
#include "proxy/cluster_admin.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "config/values.hpp"
#include "proxy/cluster_router.hpp"
#include "proxy/resp3.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/cluster/key_slot.hpp"

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
    resp::append_field(call.reply, "address", config::format_endpoint(node.endpoint));
    resp::append_field(call.reply, "id", node.id);
    resp::append_field(call.reply, "role", role(map, index));
    resp::append_field(call.reply, "health", node.healthy ? "online" : "failing");
    resp::append_field(call.reply, "slots", slot_ranges(map, index));
    resp::append_field(call.reply, "connections",
                       static_cast<std::int64_t>(links.node_connections(index)));
  }
  return Action::done;
}

namespace {

// What a DBSIZE probe learned of one node; nullopt: not asked (a replica) or no answer.
struct NodeProbe {
  bool asked = false;
  std::optional<std::int64_t> keys;
};

void append_node_lines(std::string& out, const upstream::SlotMap& map,
                       upstream::ClusterLinks& links, const std::vector<NodeProbe>& probes) {
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
class NodeSummary final : public upstream::ReplyTarget,
                          public std::enable_shared_from_this<NodeSummary> {
 public:
  NodeSummary(upstream::ClusterLinks& links, std::string sections,
              std::shared_ptr<upstream::ReplyTarget> client, std::uint64_t client_tag)
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
      auto& link = links_.node_link(primary, affinity, kResp2);
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

  upstream::ClusterLinks& links_;
  const upstream::SlotMap map_;  // the nodes as they were asked: replies name them by index
  std::string sections_;
  std::shared_ptr<upstream::ReplyTarget> client_;
  std::uint64_t client_tag_;
  std::vector<NodeProbe> probes_;
  std::size_t pending_ = 0;
};

}  // namespace

void append_cluster_info(std::string& out, upstream::ClusterLinks& links) {
  append_node_lines(out, links.routes(), links, {});
}

void answer_cluster_info(LocalCall& call, std::string sections) {
  call.deferred = true;
  auto summary = std::make_shared<NodeSummary>(call.cluster->links(), std::move(sections),
                                               *call.target, call.tag);
  summary->probe(call.client.id);
}

}  // namespace corral::proxy
