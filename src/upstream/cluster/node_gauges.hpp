// Per-node upstream figures shared by every io thread (the connections each thread's pool holds
// to a node, the slot maps a node answered), read by the metrics endpoint per `node` label.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "config/settings.hpp"

namespace corral::upstream {

struct NodeFigures {
  // Connections to the node in the ready state, over every io thread: the shared pipelined ones
  // and those dedicated to a client (MULTI, blocking commands, pub/sub). Connection keeps it.
  std::atomic<int> ready_connections{0};
  std::atomic<std::uint64_t> topology_answers{0};  // refreshes whose slot map came from it
};

// Thread-safe. Entries are created on first use and never removed: a node's figures stay at one
// address for the connections that count into them (nodes ever seen are few).
class NodeGauges {
 public:
  NodeFigures& node(const config::Endpoint& endpoint);
  // nullptr when nothing was ever counted for the address.
  const NodeFigures* find(const std::string& address) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<NodeFigures>, std::less<>> nodes_;
};

}  // namespace corral::upstream
