// Keeps the ReplicaView of a Redis Cluster current (with read_from set): every 100 ms, the
// master_repl_offset of each primary of the topology's map, then each replica's
// slave_repl_offset and link, with max_replica_lag applied against its primary's offset of the
// same round. Process-wide, on one io thread; owned by the Topology.
#pragma once

#include <utility>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/settings.hpp"
#include "upstream/offset_probe.hpp"
#include "upstream/replica_view.hpp"

namespace corral::upstream {

class Topology;

class ClusterReplicaPoller : public std::enable_shared_from_this<ClusterReplicaPoller> {
 public:
  // `topology` owns this poller and stops it; the poller ends when it is gone too.
  ClusterReplicaPoller(const boost::asio::any_io_executor& executor,
                       const config::UpstreamSettings& settings,
                       std::weak_ptr<const Topology> topology, std::shared_ptr<ReplicaView> view);

  void start();
  void stop();

 private:
  boost::asio::awaitable<void> poll_loop();
  boost::asio::awaitable<void> poll_round();

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  std::weak_ptr<const Topology> topology_;
  std::shared_ptr<ReplicaView> view_;
  bool stopping_ = false;
  boost::asio::steady_timer timer_;
  OffsetProbe offsets_;
};

}  // namespace corral::upstream
