// What a replica poller last learned of an upstream's replicas and replication offsets, shared by
// every io thread: the replicas that may serve reads, and each primary's offset as of each recent
// poll, which read-your-writes compares the replicas' offsets against. Used by the Sentinel
// upstream (one primary, named "") and the cluster (each primary named "host:port").
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/settings.hpp"

namespace corral::upstream {

struct ReplicaOffset {
  config::Endpoint address;
  std::uint64_t offset = 0;  // slave_repl_offset when polled: the replica holds at least this
  std::string primary;       // the name of the primary it replicates ("" for a Sentinel's)
};

struct PrimaryPoll {
  std::uint64_t number = 0;
  std::chrono::steady_clock::time_point started{};  // before the question was sent
  std::uint64_t offset = 0;                         // master_repl_offset
};

struct ReplicaSnapshot {
  using Polls = std::deque<PrimaryPoll>;

  // Replicas whose link to their primary is up and, with max_replica_lag, not further behind
  // than that.
  std::vector<ReplicaOffset> replicas;
  // Per primary, its recent polls, oldest first.
  std::map<std::string, Polls, std::less<>> primary_polls;

  // The primary's offset as read by the first remembered poll numbered `poll` or later: nullopt
  // while no such poll has finished. A later poll's offset is larger, so never too small.
  std::optional<std::uint64_t> primary_offset_since(std::string_view primary,
                                                    std::uint64_t poll) const {
    const auto it = primary_polls.find(primary);
    if (it == primary_polls.end()) return std::nullopt;
    for (const auto& polled : it->second) {
      if (polled.number >= poll) return polled.offset;
    }
    return std::nullopt;
  }
  // The primary's offset as read by the first remembered poll that started after `moment`
  // (its question was sent after it): nullopt while none has finished.
  std::optional<std::uint64_t> primary_offset_after(
      std::string_view primary, std::chrono::steady_clock::time_point moment) const {
    const auto it = primary_polls.find(primary);
    if (it == primary_polls.end()) return std::nullopt;
    for (const auto& polled : it->second) {
      if (polled.started > moment) return polled.offset;
    }
    return std::nullopt;
  }
  std::optional<std::uint64_t> primary_offset_since(std::uint64_t poll) const {
    return primary_offset_since("", poll);
  }
};

class ReplicaView {
 public:
  // The number the next poll of the primaries will get: one that starts after now.
  std::uint64_t next_primary_poll() const {
    return primary_polls_started_.load(std::memory_order_acquire) + 1;
  }
  // One number per round: every primary polled in the round gets it.
  std::uint64_t begin_primary_poll() {
    return primary_polls_started_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }
  void finish_primary_poll(std::string_view primary, std::uint64_t poll, std::uint64_t offset,
                           std::chrono::steady_clock::time_point started = {}) {
    std::lock_guard lock(mutex_);
    auto it = snapshot_.primary_polls.find(primary);
    if (it == snapshot_.primary_polls.end())
      it = snapshot_.primary_polls.emplace(std::string(primary), ReplicaSnapshot::Polls{}).first;
    auto& polls = it->second;
    polls.push_back({poll, started, offset});
    while (polls.size() > kRememberedPolls) polls.pop_front();
    version_.fetch_add(1, std::memory_order_release);
  }
  void finish_primary_poll(std::uint64_t poll, std::uint64_t offset,
                           std::chrono::steady_clock::time_point started = {}) {
    finish_primary_poll("", poll, offset, started);
  }
  // The replicas, and the primaries still polled: the others' offsets are forgotten.
  void publish_replicas(std::vector<ReplicaOffset> replicas,
                        const std::vector<std::string>* primaries = nullptr) {
    std::lock_guard lock(mutex_);
    snapshot_.replicas = std::move(replicas);
    if (primaries != nullptr) {
      std::erase_if(snapshot_.primary_polls, [primaries](const auto& entry) {
        return std::find(primaries->begin(), primaries->end(), entry.first) == primaries->end();
      });
    }
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
