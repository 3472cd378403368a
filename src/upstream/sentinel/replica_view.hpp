// What the replica poller last learned of a Sentinel primary's replicas and replication offsets,
// shared by every io thread: the replicas that may serve reads, and the primary's offset as of
// each recent poll, which read-your-writes compares the replicas' offsets against.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "config/settings.hpp"

namespace corral::upstream {

struct ReplicaOffset {
  config::Endpoint address;
  std::uint64_t offset = 0;  // slave_repl_offset when polled: the replica holds at least this
};

struct ReplicaSnapshot {
  // Replicas the Sentinels list as up whose link to the primary is up and, with
  // max_replica_lag, not further behind than that.
  std::vector<ReplicaOffset> replicas;
  // (poll number, master_repl_offset) of the primary's recent polls, oldest first.
  std::deque<std::pair<std::uint64_t, std::uint64_t>> primary_polls;

  // The primary's offset as read by the first remembered poll numbered `poll` or later: nullopt
  // while no such poll has finished. A later poll's offset is larger, so never too small.
  std::optional<std::uint64_t> primary_offset_since(std::uint64_t poll) const {
    for (const auto& [number, offset] : primary_polls) {
      if (number >= poll) return offset;
    }
    return std::nullopt;
  }
};

class ReplicaView {
 public:
  // The number the next poll of the primary will get: one that starts after now.
  std::uint64_t next_primary_poll() const {
    return primary_polls_started_.load(std::memory_order_acquire) + 1;
  }
  std::uint64_t begin_primary_poll() {
    return primary_polls_started_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }
  void finish_primary_poll(std::uint64_t poll, std::uint64_t offset) {
    std::lock_guard lock(mutex_);
    auto& polls = snapshot_.primary_polls;
    polls.emplace_back(poll, offset);
    while (polls.size() > kRememberedPolls) polls.pop_front();
    version_.fetch_add(1, std::memory_order_release);
  }
  void publish_replicas(std::vector<ReplicaOffset> replicas) {
    std::lock_guard lock(mutex_);
    snapshot_.replicas = std::move(replicas);
    version_.fetch_add(1, std::memory_order_release);
  }
  // Changes with every publication: a reader copies the snapshot only then.
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  ReplicaSnapshot snapshot() const {
    std::lock_guard lock(mutex_);
    return snapshot_;
  }

 private:
  // 6.4 s of polls at 100 ms. A write older than every remembered poll waits for the oldest
  // one kept, whose offset is larger: its reads may stay on the primary longer, never less.
  static constexpr std::size_t kRememberedPolls = 64;

  std::atomic<std::uint64_t> primary_polls_started_{0};
  std::atomic<std::uint64_t> version_{0};
  mutable std::mutex mutex_;
  ReplicaSnapshot snapshot_;
};

}  // namespace corral::upstream
