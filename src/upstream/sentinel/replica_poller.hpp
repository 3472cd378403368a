// Keeps the ReplicaView of a Sentinel primary current: asks the Sentinels for its replicas
// (SENTINEL REPLICAS, every second and whenever the primary changes) and polls the primary's and
// each replica's INFO replication for their offsets every 100 ms. Process-wide, on one io thread.
#pragma once

#include <utility>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/settings.hpp"
#include "upstream/offset_probe.hpp"
#include "upstream/replica_view.hpp"
#include "upstream/sentinel/sentinel_status.hpp"

namespace corral::upstream {

class ReplicaPoller : public std::enable_shared_from_this<ReplicaPoller> {
 public:
  ReplicaPoller(const boost::asio::any_io_executor& executor,
                const config::UpstreamSettings& settings, std::shared_ptr<ReplicaView> view,
                std::shared_ptr<SentinelStatus> status);

  void start();
  void stop();
  // The Sentinel watch's primary: polled from now on, and the replica list asked again (a
  // failover changes it).
  void use_primary(const config::Endpoint& primary);
  // A Sentinel reported a change of the replicas: they are listed again at the next round.
  void relist() { must_list_ = true; }

 private:
  boost::asio::awaitable<void> poll_loop();
  boost::asio::awaitable<std::optional<std::vector<config::Endpoint>>> ask_sentinels();
  boost::asio::awaitable<std::optional<std::uint64_t>> poll_primary();
  boost::asio::awaitable<std::vector<ReplicaOffset>> poll_replicas(
      std::optional<std::uint64_t> primary_offset);
  void forget_unlisted_nodes();

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  std::shared_ptr<ReplicaView> view_;
  std::shared_ptr<SentinelStatus> status_;
  std::optional<config::Endpoint> primary_;
  std::vector<config::Endpoint> replicas_;  // as the Sentinels last listed them
  bool must_list_ = true;
  bool stopping_ = false;
  boost::asio::steady_timer timer_;
  OffsetProbe offsets_;
};

}  // namespace corral::upstream
