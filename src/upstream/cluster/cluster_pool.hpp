// The cluster connections of one io thread: per node, shared pipelined connections per protocol
// (like Pool's), dedicated ones on demand, and a routing copy of the topology's slot map.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "config/settings.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/cluster/cluster_replica_reads.hpp"
#include "upstream/connection.hpp"
#include "upstream/user_login.hpp"

namespace corral::upstream {

class ClusterPool final : public ClusterLinks {
 public:
  // With `user`, every connection logs in as that upstream ACL user (and counts in no node gauge:
  // those are Corral's own connections).
  ClusterPool(const boost::asio::any_io_executor& executor,
              const config::UpstreamSettings& settings, std::shared_ptr<Topology> topology,
              metrics::ThreadStats* stats, std::optional<UserLogin> user = std::nullopt);
  ~ClusterPool() override;

  void close();
  // A shared connection's last login was refused (see UserUpstream::refused).
  bool refused() const;

  SlotMap& routes() override;
  Link& node_link(int node, std::size_t affinity, int protocol) override;
  std::shared_ptr<Link> dedicated_node_link(int node, int protocol) override;
  void request_refresh(RefreshReason reason) override { topology_->request_refresh(reason); }
  void run_after(std::chrono::milliseconds delay, std::function<void()> fn) override;
  ClusterCounters& counters() override { return topology_->counters(); }
  std::string map_failure() const override { return topology_->last_failure(); }
  ClusterHold& held() override { return held_; }

  std::size_t node_connections(int node) override;
  ClusterReplicaReads* replica_reads() override { return replica_reads_.get(); }

 private:
  struct NodeConnections {
    std::vector<std::shared_ptr<Connection>> by_protocol[2];  // RESP2, RESP3
  };
  void sync();
  // The node's process-wide count of ready connections (corral_cluster_node_connections).
  std::atomic<int>* ready_count(const config::Endpoint& node);
  ConnectionOptions options_for(const config::Endpoint& node, bool reconnect, int protocol) const;

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  std::shared_ptr<Topology> topology_;
  metrics::ThreadStats* stats_;
  std::uint64_t version_ = 0;
  SlotMap routes_;
  std::map<std::string, NodeConnections> connections_;  // by "host:port"
  std::vector<NodeConnections*> by_node_;               // parallel to routes_.nodes
  std::optional<UserLogin> user_;
  ClusterHold held_{*this};
  std::unique_ptr<ClusterReplicaReads> replica_reads_;  // read_from set
};

}  // namespace corral::upstream
