// Read-your-writes on a cluster is kept per client and primary (node), not per slot: a
// primary's replication offset covers all its slots, so a replica that has the offset has the
// write whatever its slot, and a client's entries stay bounded by the primaries it wrote to.
// The price: after a write to one slot, the client's reads of that primary's other slots also
// stay on the primary until a replica has caught up (usually within one or two polls).
#include "upstream/cluster/cluster_replica_reads.hpp"

#include <vector>

#include "config/values.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/write_ledger.hpp"

namespace corral::upstream {

namespace {
class ClusterWriteAnswer final : public WriteAnswer {
 public:
  ClusterWriteAnswer(std::weak_ptr<WriteLedger> ledger, std::size_t client,
                     std::shared_ptr<ReplyTarget> inner, ClusterLinks& links, int slot)
      : WriteAnswer(std::move(ledger), client, std::move(inner)), links_(links), slot_(slot) {}

 protected:
  std::string primary() const override {
    if (slot_ < 0) return std::string(WriteLedger::kEveryPrimary);
    const auto& routes = links_.routes();
    const int owner = routes.owner.empty() ? -1 : routes.owner[slot_];
    if (owner < 0) return std::string(WriteLedger::kEveryPrimary);
    return config::format_endpoint(routes.nodes[owner].endpoint);
  }

 private:
  ClusterLinks& links_;
  int slot_;
};
}  // namespace

ClusterReplicaReads::ClusterReplicaReads(std::shared_ptr<const ReplicaView> view,
                                         bool read_your_writes)
    : view_(view),
      read_your_writes_(read_your_writes),
      ledger_(std::make_shared<WriteLedger>(std::move(view))) {}

ClusterReplicaReads::~ClusterReplicaReads() = default;

void ClusterReplicaReads::sync() {
  const auto version = view_->version();
  if (version == seen_version_) return;
  seen_version_ = version;
  snapshot_ = view_->snapshot();
  ledger_->prune(snapshot_);
  usable_.clear();
  for (const auto& replica : snapshot_.replicas)
    usable_.emplace(config::format_endpoint(replica.address), &replica);
}

ClusterReplicaReads::Pick ClusterReplicaReads::pick(const SlotMap& routes, int owner,
                                                    std::size_t client) {
  sync();
  const auto primary = config::format_endpoint(routes.nodes[owner].endpoint);
  const auto need = ledger_->must_have(client, primary, snapshot_);
  if (!need) return {Place::own_writes_on_primary};
  std::vector<int> candidates;
  bool own_writes_missing = false;
  for (const int r : routes.replicas_of(owner)) {
    if (!routes.nodes[r].healthy) continue;
    const auto it = usable_.find(config::format_endpoint(routes.nodes[r].endpoint));
    // Polled as another primary's replica: its offset says nothing of this primary's stream.
    if (it == usable_.end() || it->second->primary != primary) continue;
    if (it->second->offset < *need) {
      own_writes_missing = true;
      continue;
    }
    candidates.push_back(r);
  }
  if (candidates.empty()) {
    return {own_writes_missing ? Place::own_writes_on_primary : Place::no_usable_replica};
  }
  // The same replica for a client's reads while the usable set stays the same, so that one
  // client does not read a newer value from one replica and then an older one from another.
  return {Place::replica, candidates[client % candidates.size()]};
}

int ClusterReplicaReads::pick_fill(const SlotMap& routes, int owner,
                                   std::chrono::steady_clock::time_point seen) {
  sync();
  const auto primary = config::format_endpoint(routes.nodes[owner].endpoint);
  const auto need = snapshot_.primary_offset_after(primary, seen);
  if (!need) return -1;
  std::vector<int> candidates;
  for (const int r : routes.replicas_of(owner)) {
    if (!routes.nodes[r].healthy) continue;
    const auto it = usable_.find(config::format_endpoint(routes.nodes[r].endpoint));
    if (it == usable_.end() || it->second->primary != primary || it->second->offset < *need)
      continue;
    candidates.push_back(r);
  }
  if (candidates.empty()) return -1;
  return candidates[fills_++ % candidates.size()];
}

std::shared_ptr<ReplyTarget> ClusterReplicaReads::track_write(ClusterLinks& links,
                                                              std::size_t client, int slot,
                                                              std::shared_ptr<ReplyTarget> target) {
  ledger_->write_sent(client);
  return std::make_shared<ClusterWriteAnswer>(ledger_, client, std::move(target), links, slot);
}

}  // namespace corral::upstream
