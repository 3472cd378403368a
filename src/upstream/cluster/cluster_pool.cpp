// Cluster connections of one io thread: the routing copy follows the topology's version, and a
// node that left the map has its connections closed.
#include "upstream/cluster/cluster_pool.hpp"

#include <algorithm>

#include <boost/asio/steady_timer.hpp>

#include "config/values.hpp"

namespace corral::upstream {

ClusterPool::ClusterPool(const boost::asio::any_io_executor& executor,
                         const config::UpstreamSettings& settings,
                         std::shared_ptr<Topology> topology, metrics::ThreadStats* stats,
                         std::optional<UserLogin> user)
    : executor_(executor),
      settings_(settings),
      topology_(std::move(topology)),
      stats_(stats),
      user_(std::move(user)) {
  if (auto replicas = topology_->replicas()) {
    replica_reads_ =
        std::make_unique<ClusterReplicaReads>(std::move(replicas), settings_.read_your_writes);
  }
}

ClusterPool::~ClusterPool() { close(); }

void ClusterPool::close() {
  held_.close();
  for (auto& [key, node] : connections_) {
    for (auto& list : node.by_protocol) {
      for (auto& connection : list) connection->close();
    }
  }
  connections_.clear();
  by_node_.clear();
}

bool ClusterPool::refused() const {
  for (const auto& [key, node] : connections_) {
    for (const auto& list : node.by_protocol) {
      for (const auto& connection : list) {
        if (!connection->refusal().empty()) return true;
      }
    }
  }
  return false;
}

SlotMap& ClusterPool::routes() {
  if (topology_->version() != version_) sync();
  return routes_;
}

void ClusterPool::sync() {
  version_ = topology_->version();
  const auto published = topology_->current();
  if (!published) return;
  routes_ = *published;
  std::map<std::string, NodeConnections> kept;
  by_node_.assign(routes_.nodes.size(), nullptr);
  for (std::size_t i = 0; i < routes_.nodes.size(); ++i) {
    const auto key = config::format_endpoint(routes_.nodes[i].endpoint);
    auto it = connections_.find(key);
    if (it != connections_.end()) kept[key] = std::move(it->second), connections_.erase(it);
  }
  // What is left belongs to nodes that left the cluster: their pending commands fail now.
  for (auto& [key, node] : connections_) {
    for (auto& list : node.by_protocol) {
      for (auto& connection : list) connection->close();
    }
  }
  connections_ = std::move(kept);
}

ConnectionOptions ClusterPool::options_for(const config::Endpoint& node, bool reconnect,
                                           int protocol) const {
  auto options = node_connection_options(settings_, node, reconnect);
  options.protocol = protocol;
  options.readonly = settings_.read_from != config::ReadFrom::primary;
  if (user_) {
    options.username = user_->user;
    options.password = user_->password;
  }
  return options;
}

std::atomic<int>* ClusterPool::ready_count(const config::Endpoint& node) {
  if (user_) return nullptr;
  return &topology_->node_gauges().node(node).ready_connections;
}

Link& ClusterPool::node_link(int node, std::size_t affinity, int protocol) {
  if (by_node_.size() < routes_.nodes.size()) by_node_.resize(routes_.nodes.size(), nullptr);
  auto*& entry = by_node_[node];
  const auto& endpoint = routes_.nodes[node].endpoint;
  if (entry == nullptr) entry = &connections_[config::format_endpoint(endpoint)];
  auto& list = entry->by_protocol[protocol == 3 ? 1 : 0];
  if (list.empty()) {
    const int count = std::max(1, settings_.connections_per_thread);
    for (int i = 0; i < count; ++i) {
      auto connection = std::make_shared<Connection>(
          executor_, options_for(endpoint, true, protocol), stats_, ready_count(endpoint));
      connection->start();
      list.push_back(std::move(connection));
    }
  }
  return *list[affinity % list.size()];
}

std::shared_ptr<Link> ClusterPool::dedicated_node_link(int node, int protocol) {
  const auto& endpoint = routes_.nodes[node].endpoint;
  auto connection = std::make_shared<Connection>(executor_, options_for(endpoint, false, protocol),
                                                 stats_, ready_count(endpoint));
  connection->start();
  return connection;
}

void ClusterPool::run_after(std::chrono::milliseconds delay, std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(executor_, delay);
  timer->async_wait([timer, fn = std::move(fn)](boost::system::error_code) { fn(); });
}

std::size_t ClusterPool::node_connections(int node) {
  const auto it = connections_.find(config::format_endpoint(routes_.nodes[node].endpoint));
  if (it == connections_.end()) return 0;
  return it->second.by_protocol[0].size() + it->second.by_protocol[1].size();
}

}  // namespace corral::upstream
