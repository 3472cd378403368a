// A recording stand-in for the cluster seam (upstream::ClusterLinks): a slot map built in code,
// one RecordingLink per node, refresh requests and delayed calls kept for the test to inspect.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "recording_upstream.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/cluster/cluster_router.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::proxy::test {

// Two shards: primary 0 (port 7000) owns slots 0..8191, primary 1 (7001) the rest; nodes 2 and 3
// (7100, 7101) are their replicas.
inline upstream::SlotMap two_shards() {
  upstream::SlotMap map;
  map.nodes = {{"a", {"127.0.0.1", 7000}, true, true, -1},
               {"b", {"127.0.0.1", 7001}, true, true, -1},
               {"a2", {"127.0.0.1", 7100}, false, true, 0},
               {"b2", {"127.0.0.1", 7101}, false, true, 1}};
  for (std::size_t slot = 0; slot < upstream::kSlotCount; ++slot)
    map.owner[slot] = slot < 8192 ? 0 : 1;
  map.primaries = {0, 1};
  return map;
}

class RecordingClusterLinks final : public upstream::ClusterLinks {
 public:
  // Out-of-band commands hold their link until answered; a test may leave them unanswered.
  ~RecordingClusterLinks() override {
    for (auto& [port, link] : dedicated) link->forget_targets();
  }
  upstream::SlotMap& routes() override { return map; }
  upstream::Link& node_link(int node, std::size_t, int) override {
    auto& link = shared[map.nodes[node].endpoint.port];
    if (!link) link = std::make_unique<RecordingLink>(0);
    return *link;
  }
  std::shared_ptr<upstream::Link> dedicated_node_link(int node, int) override {
    dedicated.emplace_back(map.nodes[node].endpoint.port, std::make_shared<RecordingLink>(0));
    return dedicated.back().second;
  }
  void request_refresh(upstream::RefreshReason reason) override { refreshes.push_back(reason); }
  void run_after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    delays.push_back(delay);
    later.push_back({clock + delay, std::move(fn)});
  }
  upstream::ClusterCounters& counters() override { return counters_; }
  upstream::ClusterHold& held() override { return held_; }
  std::chrono::steady_clock::time_point now() const override { return clock; }
  std::size_t node_connections(int node) override {
    return shared.count(map.nodes[node].endpoint.port);
  }

  // The shared link of the node on `port` (which must have been used).
  RecordingLink& at(std::uint16_t port) {
    REQUIRE(shared.count(port) == 1);
    return *shared[port];
  }
  bool used(std::uint16_t port) const { return shared.count(port) == 1; }
  // Runs what was scheduled so far, the manual clock moved to when the last of it was due.
  void run_later() {
    auto due = std::move(later);
    later.clear();
    for (auto& [when, fn] : due) clock = std::max(clock, when);
    for (auto& [when, fn] : due) fn();
  }

  upstream::SlotMap map = two_shards();
  std::map<std::uint16_t, std::unique_ptr<RecordingLink>> shared;
  std::vector<std::pair<std::uint16_t, std::shared_ptr<RecordingLink>>> dedicated;
  std::vector<upstream::RefreshReason> refreshes;
  std::vector<std::chrono::milliseconds> delays;
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::function<void()>>> later;
  std::chrono::steady_clock::time_point clock{std::chrono::hours(1)};
  upstream::ClusterCounters counters_;
  upstream::ClusterHold held_{*this};
};

// A dispatcher in cluster mode over the recording seam.
struct ClusterProxy {
  explicit ClusterProxy(config::Settings with = cluster_settings())
      : proxy(std::move(with), &links),
        router(static_cast<upstream::ClusterUpstream&>(*proxy.upstream).router()) {}
  static config::Settings cluster_settings() {
    config::Settings s;
    s.upstream.cluster = true;
    s.upstream.servers = {{"127.0.0.1", 7000}};
    s.upstream.max_redirects = 3;
    return s;
  }

  RecordingClusterLinks links;
  Proxy proxy;
  upstream::ClusterRouter& router;
};

}  // namespace corral::proxy::test
