// The cluster's upstream seam for the proxy's cluster router: this io thread's view of the slot
// map, and links to its nodes. ClusterPool is the production one; unit tests put a recorder here.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "upstream/cluster/cluster_hold.hpp"
#include "upstream/cluster/slot_map.hpp"
#include "upstream/cluster/topology.hpp"
#include "upstream/link.hpp"

namespace corral::upstream {

class ClusterReplicaReads;

class ClusterLinks {
 public:
  virtual ~ClusterLinks() = default;

  // This thread's routing view: the topology's latest map, with the slots that MOVED replies
  // moved since. Empty (no primaries) until the first refresh succeeded.
  virtual SlotMap& routes() = 0;
  // A shared pipelined connection to routes().nodes[node]; a client always passes the same
  // `affinity`, so its commands to one node keep their order.
  virtual Link& node_link(int node, std::size_t affinity, int protocol) = 0;
  // A new connection to the node owned by one client; it does not reconnect.
  virtual std::shared_ptr<Link> dedicated_node_link(int node, int protocol) = 0;
  virtual void request_refresh(RefreshReason reason) = 0;
  // Runs `fn` on this io thread after `delay` (TRYAGAIN's backoff).
  virtual void run_after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  virtual ClusterCounters& counters() = 0;
  // Connections this thread has open to the node (shared ones), for CORRAL.CLUSTER and INFO.
  virtual std::size_t node_connections(int node) = 0;
  // This thread's requests waiting for their slot's primary (a failover).
  virtual ClusterHold& held() = 0;
  // The clock a hold's deadline is measured by (a test's manual one).
  virtual std::chrono::steady_clock::time_point now() const {
    return std::chrono::steady_clock::now();
  }
  // Why no slot map came yet (the topology's last failure, e.g. a node refusing AUTH); empty
  // when unknown. Clients waiting for the first map are told it.
  virtual std::string map_failure() const { return {}; }
  // With read_from set and replication offsets polled: this thread's replica choice by offset
  // and read-your-writes. Null: replicas are chosen by the map's health alone.
  virtual ClusterReplicaReads* replica_reads() { return nullptr; }
};

}  // namespace corral::upstream
