// Readiness of a Redis Cluster upstream: ready when every slot the cluster serves has a primary
// that answers this Corral, not when one configured seed does. One io thread PINGs each primary of
// its slot map on the connection clients use; a primary whose PING fails or goes unanswered past
// the deadline leaves its slots unserved until it answers again (or a replica takes them over).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "upstream/cluster/cluster_links.hpp"

namespace corral::upstream {

class ClusterReadyProbe : public std::enable_shared_from_this<ClusterReadyProbe> {
 public:
  // `links`: one io thread's cluster connections (kept alive by the probe while it runs).
  ClusterReadyProbe(const boost::asio::any_io_executor& executor,
                    std::shared_ptr<ClusterLinks> links, std::chrono::milliseconds interval,
                    std::chrono::milliseconds deadline);
  // On the executor's thread.
  void start();
  void stop();

  // Thread-safe: empty when ready, else why not (for /readyz's body and the log).
  std::string not_ready_reason() const;
  // Thread-safe: slots served by a primary that answers (corral_cluster_slots_ready).
  std::size_t slots_ready() const { return slots_ready_.load(std::memory_order_relaxed); }

  // The outcome of a node's outstanding PING (called on the executor's thread).
  void answered(const std::string& node, bool ok);

 private:
  struct NodeProbe {
    bool outstanding = false;
    bool answering = false;  // its last PING was answered in time
    std::chrono::steady_clock::time_point sent_at;
  };

  boost::asio::awaitable<void> loop();
  void probe_primaries(std::chrono::steady_clock::time_point now);
  void judge();

  boost::asio::any_io_executor executor_;
  std::shared_ptr<ClusterLinks> links_;
  boost::asio::steady_timer timer_;
  bool stopped_ = false;  // executor thread only
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds deadline_;
  std::map<std::string, NodeProbe> nodes_;  // by "host:port": node indexes change with the map
  mutable std::mutex mutex_;
  std::string reason_ = "no slot map yet";
  std::atomic<std::size_t> slots_ready_{0};
};

}  // namespace corral::upstream
