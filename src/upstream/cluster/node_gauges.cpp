// The per-node table: one lock, taken when a connection is opened or a metric is read, never per
// command.
#include "upstream/cluster/node_gauges.hpp"

#include "config/values.hpp"

namespace corral::upstream {

NodeFigures& NodeGauges::node(const config::Endpoint& endpoint) {
  std::lock_guard lock(mutex_);
  auto& figures = nodes_[config::format_endpoint(endpoint)];
  if (!figures) figures = std::make_unique<NodeFigures>();
  return *figures;
}

const NodeFigures* NodeGauges::find(const std::string& address) const {
  std::lock_guard lock(mutex_);
  const auto it = nodes_.find(address);
  return it == nodes_.end() ? nullptr : it->second.get();
}

}  // namespace corral::upstream
