// When Corral last heard from its tracking link: an invalidation, a FLUSHALL, or a new session
// (which flushes the tracked prefixes). A cache fill may read a replica only if the replica
// holds what the primary held after that moment, so that no fill is older than an
// invalidation Corral has already applied. Written by the tracking listener, read by fills on
// every io thread.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>

namespace corral::upstream {

class InvalidationMark {
 public:
  using Clock = std::chrono::steady_clock;

  // Called before the message is applied to the cache: a fill that reads the mark after the
  // invalidation took effect sees this moment or a later one.
  void note() { last_.store(Clock::now().time_since_epoch().count(), std::memory_order_seq_cst); }
  // nullopt until the first message (no tracking session yet).
  std::optional<Clock::time_point> last() const {
    const auto ticks = last_.load(std::memory_order_seq_cst);
    if (ticks == 0) return std::nullopt;
    return Clock::time_point(Clock::duration(ticks));
  }

 private:
  std::atomic<Clock::rep> last_{0};
};

}  // namespace corral::upstream
