// Invalidation on a Redis Cluster: Redis tracks keys per node, so one tracking connection (an
// InvalidationListener) runs per primary, following the topology: a new primary gets one, a node
// that stopped being a primary loses its own. When slots change owner (a failover, a reshard),
// the cached keys of exactly those slots go: replication is asynchronous, so the new owner need
// not hold what the old one acknowledged. A listener's own flush covers its node's slots only.
// The process runs one per io thread (thread `filler`), each applying a node's invalidations to the
// fills of its own thread, with which they are ordered (cache::Store::set_thread_filler).
#pragma once

#include <utility>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/settings.hpp"
#include "stampede/hot/hot_link_name.hpp"
#include "upstream/cluster/slot_map.hpp"

namespace corral::upstream {
class Topology;
}

namespace corral::stampede {

class CacheRuntime;
class InvalidationListener;

class ClusterInvalidation : public std::enable_shared_from_this<ClusterInvalidation> {
 public:
  ClusterInvalidation(const boost::asio::any_io_executor& executor,
                      const config::UpstreamSettings& upstream,
                      std::shared_ptr<const upstream::Topology> topology, CacheRuntime& runtime,
                      std::function<void(std::string_view)> invalidated, int thread,
                      HotLinkNaming naming = {});

  // On the executor's thread.
  void start();
  void stop();
  void restart();  // the policies changed

  // Thread-safe, for metrics: every primary's tracking is up (and there is one).
  bool tracking() const;
  bool wanted() const;
  std::uint64_t reconnects() const;
  std::size_t listeners() const;

 private:
  boost::asio::awaitable<void> follow();
  void sync();
  void drop_slots(const upstream::SlotSet& slots);

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings upstream_;
  std::shared_ptr<const upstream::Topology> topology_;
  CacheRuntime& runtime_;
  std::function<void(std::string_view)> invalidated_;
  boost::asio::steady_timer timer_;
  int thread_;  // the io thread's index: thread 0's instance also counts and drops moved slots
  HotLinkNaming naming_;  // names its nodes' hot-key links
  std::uint64_t version_ = 0;
  std::shared_ptr<const upstream::SlotMap> seen_;  // the map sync() last followed
  bool stopped_ = false;
  mutable std::mutex mutex_;  // listeners_ is read by the metrics thread
  std::map<std::string, std::shared_ptr<InvalidationListener>> listeners_;  // by "host:port"
  std::atomic<std::uint64_t> retired_reconnects_{0};
};

}  // namespace corral::stampede
