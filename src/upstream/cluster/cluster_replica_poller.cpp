// One round reads every primary before any replica, as the Sentinel poller does: a replica's
// offset read after its primary's can only be nearer to it, so the lag a round measures is at
// most the replica's real lag when the primary was read, and a primary offset read in a round
// that started after a write's answer includes that write.
#include "upstream/cluster/cluster_replica_poller.hpp"

#include <chrono>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "config/values.hpp"
#include "upstream/cluster/topology.hpp"
#include "upstream/replication_info.hpp"

namespace corral::upstream {

namespace asio = boost::asio;
using asio::awaitable;

namespace {
constexpr std::chrono::milliseconds kPollInterval{100};
}  // namespace

ClusterReplicaPoller::ClusterReplicaPoller(const asio::any_io_executor& executor,
                                           const config::UpstreamSettings& settings,
                                           std::weak_ptr<const Topology> topology,
                                           std::shared_ptr<ReplicaView> view)
    : executor_(executor),
      settings_(settings),
      topology_(std::move(topology)),
      view_(std::move(view)),
      timer_(executor),
      offsets_(executor, settings) {}

void ClusterReplicaPoller::start() {
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->poll_loop(); }, asio::detached);
}

void ClusterReplicaPoller::stop() {
  stopping_ = true;
  timer_.cancel();
  offsets_.close();
}

awaitable<void> ClusterReplicaPoller::poll_loop() {
  auto self = shared_from_this();
  while (!stopping_) {
    co_await poll_round();
    if (stopping_) break;
    timer_.expires_after(kPollInterval);
    boost::system::error_code ignored;
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

awaitable<void> ClusterReplicaPoller::poll_round() {
  std::shared_ptr<const SlotMap> map;
  if (const auto topology = topology_.lock()) {
    map = topology->current();  // the topology is not held across the round's awaits
  } else {
    stopping_ = true;
    co_return;
  }
  if (!map) co_return;
  // Numbered before any primary is asked: a client whose write was acknowledged before this
  // number was taken finds its write inside the offset this round reads of its primary.
  const auto round = view_->begin_primary_poll();
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::string> primaries;
  std::map<int, std::optional<std::uint64_t>> primary_offsets;  // by node index
  for (const int p : map->primaries) {
    if (stopping_) co_return;
    const auto name = config::format_endpoint(map->nodes[p].endpoint);
    const auto offset = co_await offsets_.primary_offset(map->nodes[p].endpoint);
    if (offset) view_->finish_primary_poll(name, round, *offset, started);
    primary_offsets[p] = offset;
    primaries.push_back(name);
  }
  std::vector<ReplicaOffset> usable;
  std::vector<std::string> polled = primaries;
  for (std::size_t i = 0; i < map->primaries.size(); ++i) {
    const int p = map->primaries[i];
    for (const int r : map->replicas_of(p)) {
      if (stopping_) co_return;
      const auto& replica = map->nodes[r];
      if (!replica.healthy) continue;
      polled.push_back(config::format_endpoint(replica.endpoint));
      const auto offset = co_await offsets_.replica_offset(replica.endpoint);
      if (!offset || !within_replica_lag(primary_offsets[p], *offset, settings_.max_replica_lag)) {
        continue;
      }
      usable.push_back({replica.endpoint, *offset, primaries[i]});
    }
  }
  offsets_.keep_only(polled);
  view_->publish_replicas(std::move(usable), &primaries);
}

}  // namespace corral::upstream
