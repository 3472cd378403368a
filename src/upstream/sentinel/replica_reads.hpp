// One io thread's routing of a Sentinel upstream's client commands with read_from set: read-only
// commands to a usable replica's shared connection, everything else to the primary's links, and
// each client's reads kept on the primary until the replica has its acknowledged writes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "config/settings.hpp"
#include "upstream/link.hpp"
#include "upstream/replica_view.hpp"
#include "upstream/sentinel/sentinel_status.hpp"
#include "upstream/upstream.hpp"

namespace corral::metrics {
class ThreadStats;
}

namespace corral::upstream {

class Pool;
class SentinelLinks;
class WriteLedger;

// `read_from: replica` and no replica is usable for the read.
inline constexpr std::string_view kErrNoUsableReplica =
    "ERR no usable replica (upstream.read_from: replica reads only from replicas that are up and "
    "within max_replica_lag; prefer_replica falls back to the primary)";

class ReplicaReads {
 public:
  // `primary` (the Sentinel links) must outlive this; where each read went is counted in its
  // status.
  ReplicaReads(const boost::asio::any_io_executor& executor,
               const config::UpstreamSettings& settings, metrics::ThreadStats* stats,
               SentinelLinks& primary, std::shared_ptr<const ReplicaView> view);
  ~ReplicaReads();

  // Upstream::send's contract.
  bool send(const Routed& command, std::uint64_t tag, const std::shared_ptr<ReplyTarget>& target);
  // A cache fill on a usable replica whose offset has reached the primary's offset polled after
  // `seen` (Upstream::fetch_from_replica); false, with nothing sent, when there is none: the
  // caller fills from the primary.
  bool fill(std::string_view bytes, int database,
            std::optional<std::chrono::steady_clock::time_point> seen,
            const std::shared_ptr<ReplyTarget>& target);

 private:
  bool send_write(const Routed& command, std::uint64_t tag,
                  const std::shared_ptr<ReplyTarget>& target);
  enum class ReadPlace : std::uint8_t { replica, own_writes_on_primary, no_usable_replica };
  struct ReadChoice {
    ReadPlace place;
    Pool* replica = nullptr;  // ReadPlace::replica
  };
  ReadChoice pick_replica(std::size_t client, int database, int protocol);
  void sync_replicas();
  void retire(std::shared_ptr<Pool> pool);

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  metrics::ThreadStats* stats_;
  Links& primary_;
  std::shared_ptr<const ReplicaView> view_;
  std::uint64_t seen_version_ = ~std::uint64_t{0};
  ReplicaSnapshot snapshot_;
  std::map<std::string, std::shared_ptr<Pool>> pools_;  // by "host:port"
  std::shared_ptr<WriteLedger> ledger_;
  std::size_t fills_ = 0;  // spreads fills over the replicas that qualify
  std::shared_ptr<ReadRouteCounts> read_counts_;
};

}  // namespace corral::upstream
