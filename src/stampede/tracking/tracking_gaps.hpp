// Which cached keys may be hiding a write right now: those covered by a tracking link that was
// live and then went down or silent, until a new link is tracking and has flushed them. Reads of
// such a key are revalidated with the origin before they are answered (see Engine::serve_key).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

namespace corral::stampede {

class TrackingGaps {
 public:
  // Whether a key falls under the lost link (its prefixes, and on a cluster the node's slots).
  using Covers = std::function<bool(std::string_view user_key)>;

  // A live link ended: the keys it covers are no longer known to be coherent. Returns the id
  // that close() takes once tracking is back.
  std::uint64_t open(Covers covers);
  void close(std::uint64_t id);

  // One relaxed load: the data path pays nothing more while every link is live.
  bool any() const { return open_gaps_.load(std::memory_order_relaxed) != 0; }
  bool covers(std::string_view user_key) const;
  std::size_t size() const { return static_cast<std::size_t>(open_gaps_.load()); }

  // A link that stayed open but answered nothing for the tracking timeout.
  void count_silence() { silences_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t silences() const { return silences_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::uint64_t, Covers>> gaps_;
  std::uint64_t next_id_ = 1;
  std::atomic<int> open_gaps_{0};
  std::atomic<std::uint64_t> silences_{0};
};

}  // namespace corral::stampede
