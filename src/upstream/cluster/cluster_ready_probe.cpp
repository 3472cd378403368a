// The cluster readiness probe's loop: a PING per primary in flight at a time, and after each
// round the slots whose owner does not answer, named by range.
#include <utility>

#include "upstream/cluster/cluster_ready_probe.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "config/values.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/cluster/slot_map.hpp"
#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/server_pause.hpp"

namespace corral::upstream {

namespace asio = boost::asio;

namespace {

// Holds the probe weakly: a PING answered after shutdown has no one to tell.
class NodePingReply : public ReplyTarget {
 public:
  NodePingReply(std::weak_ptr<ClusterReadyProbe> probe, std::string node)
      : probe_(std::move(probe)), node_(std::move(node)) {}
  void on_reply(std::uint64_t, std::string_view reply) override {
    // -LOADING, -BUSY, -CLUSTERDOWN: the node answers but cannot serve its slots.
    if (auto probe = probe_.lock()) probe->answered(node_, reply.empty() || reply.front() != '-');
  }
  void on_failure(std::uint64_t, std::string_view) override {
    if (auto probe = probe_.lock()) probe->answered(node_, false);
  }

 private:
  std::weak_ptr<ClusterReadyProbe> probe_;
  std::string node_;
};

std::string slot_range(std::size_t first, std::size_t last) {
  return first == last ? "slot " + std::to_string(first)
                       : "slots " + std::to_string(first) + "-" + std::to_string(last);
}
}  // namespace

ClusterReadyProbe::ClusterReadyProbe(const asio::any_io_executor& executor,
                                     std::shared_ptr<ClusterLinks> links,
                                     std::chrono::milliseconds interval,
                                     std::chrono::milliseconds deadline)
    : executor_(executor),
      links_(std::move(links)),
      timer_(executor),
      interval_(interval),
      deadline_(deadline) {}

void ClusterReadyProbe::start() {
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->loop(); }, asio::detached);
}

void ClusterReadyProbe::stop() {
  stopped_ = true;
  timer_.cancel();
}

std::string ClusterReadyProbe::not_ready_reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

void ClusterReadyProbe::answered(const std::string& node, bool ok) {
  const auto found = nodes_.find(node);
  if (found == nodes_.end()) return;
  found->second.outstanding = false;
  found->second.answering = ok;
}

asio::awaitable<void> ClusterReadyProbe::loop() {
  auto self = shared_from_this();
  while (!stopped_) {
    timer_.expires_after(interval_);
    boost::system::error_code ec;
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec || stopped_) co_return;
    judge();
    probe_primaries(std::chrono::steady_clock::now());
  }
}

void ClusterReadyProbe::probe_primaries(std::chrono::steady_clock::time_point now) {
  const SlotMap& map = links_->routes();
  std::map<std::string, NodeProbe> kept;
  for (const int index : map.primaries) {
    const std::string node = config::format_endpoint(map.nodes[index].endpoint);
    auto& probe = kept[node];
    if (const auto found = nodes_.find(node); found != nodes_.end()) probe = found->second;
    if (probe.outstanding) {
      // A forwarded CLIENT PAUSE ALL holds the PING until its end: the deadline counts from
      // there. Otherwise still no answer: not answering now, and again once it is answered.
      if (server_pause().in_force(now)) {
        probe.sent_at = now;
      } else if (now - probe.sent_at > deadline_) {
        probe.answering = false;
      }
      continue;
    }
    // Affinity 0: the PING queues behind what clients wait for on that node, which is exactly
    // what readiness should measure. RESP2: the probe reads "+PONG".
    auto reply = std::make_shared<NodePingReply>(weak_from_this(), node);
    if (links_->node_link(index, 0, 2).send(kPingCommand, reply, 0)) {
      probe.outstanding = true;
      probe.sent_at = now;
    } else {
      probe.answering = false;
    }
  }
  nodes_ = std::move(kept);
}

void ClusterReadyProbe::judge() {
  const SlotMap& map = links_->routes();
  std::string reason;
  std::size_t ready = 0;
  if (map.primaries.empty()) {
    const auto failure = links_->map_failure();
    reason = failure.empty() ? "no slot map yet" : "no slot map yet: " + failure;
  }
  // Unserved slots (owner -1) are the cluster's own state: readiness asks only that what the
  // cluster serves, this Corral serves too.
  for (std::size_t slot = 0; slot < kSlotCount && !map.primaries.empty();) {
    const int owner = map.owner[slot];
    std::size_t last = slot;
    while (last + 1 < kSlotCount && map.owner[last + 1] == owner) ++last;
    if (owner >= 0) {
      const std::string node = config::format_endpoint(map.nodes[owner].endpoint);
      const auto found = nodes_.find(node);
      if (found != nodes_.end() && found->second.answering) {
        ready += last - slot + 1;
      } else if (reason.size() < 512) {
        reason += (reason.empty() ? "" : "; ") + slot_range(slot, last) +
                  ": no answering primary (" + node + ")";
      }
    }
    slot = last + 1;
  }
  if (reason.empty() && ready == 0) reason = "the cluster serves no slot";
  // A primary that stopped answering is being failed over, or was: the map that names its
  // successor is asked for now (the topology allows one refresh a second), not at the next
  // periodic refresh.
  if (!reason.empty()) links_->request_refresh(RefreshReason::connection);
  slots_ready_.store(ready, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  reason_ = std::move(reason);
}

}  // namespace corral::upstream
