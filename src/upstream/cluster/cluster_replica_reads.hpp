// One io thread's choice of replica for a cluster read with read_from set, by the polled
// offsets (ClusterReplicaPoller): a replica of the slot's primary that is healthy in the map,
// within max_replica_lag, and, with read_your_writes, holds every write the client had
// acknowledged on that primary. Also wraps clients' writes so that the ledger sees them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "config/settings.hpp"
#include "upstream/cluster/slot_map.hpp"
#include "upstream/replica_view.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

class ClusterLinks;
class WriteLedger;

class ClusterReplicaReads {
 public:
  ClusterReplicaReads(std::shared_ptr<const ReplicaView> view, bool read_your_writes);
  ~ClusterReplicaReads();

  enum class Place : std::uint8_t { replica, own_writes_on_primary, no_usable_replica };
  struct Pick {
    Place place;
    int node = -1;  // Place::replica: the index in the routes
  };
  // Where `client`'s read of a slot that `owner` serves in `routes` goes.
  Pick pick(const SlotMap& routes, int owner, std::size_t client);

  // A replica of `owner` for a cache fill: one whose offset has reached the primary's offset
  // polled after `seen` (the tracking link's last message); -1: none, the primary fills.
  int pick_fill(const SlotMap& routes, int owner, std::chrono::steady_clock::time_point seen);

  bool tracks_writes() const { return read_your_writes_; }
  // `target` wrapped so that the ledger counts the write of `client` to `slot` (-1: a write
  // without one slot, counted against every primary) until it is answered. The primary that
  // holds it is the slot's owner in `links`' routes at the answer (after any MOVED it followed).
  std::shared_ptr<ReplyTarget> track_write(ClusterLinks& links, std::size_t client, int slot,
                                           std::shared_ptr<ReplyTarget> target);

 private:
  void sync();

  std::shared_ptr<const ReplicaView> view_;
  bool read_your_writes_;
  std::uint64_t seen_version_ = ~std::uint64_t{0};
  ReplicaSnapshot snapshot_;
  std::map<std::string, const ReplicaOffset*, std::less<>> usable_;  // by "host:port"
  std::shared_ptr<WriteLedger> ledger_;
  std::size_t fills_ = 0;  // spreads fills over the replicas that qualify
};

}  // namespace corral::upstream
