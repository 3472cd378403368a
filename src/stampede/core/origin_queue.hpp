// Admission to one policy's origin, without any I/O: at most max_origin_concurrency fetches at
// once, then up to max_origin_queue more waiting in arrival order, each taking over the slot of
// a fetch that ends. The asynchronous layer times a queued fetch out by withdrawing it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "cache/clock.hpp"

namespace corral::stampede {

enum class OriginEntry : std::uint8_t {
  started,  // the fetch holds a slot: release() it when done
  queued,   // the fetch waits: release() hands it a slot, or withdraw() takes it out
  full,     // the queue is full: nothing is held, the caller answers without a fetch
};

struct OriginLimits {
  int concurrency = 0;    // fetches at once; <= 0: no limit
  std::size_t queue = 0;  // fetches that may wait beyond them; 0: none (refused at once)
};

// `Payload` is what the asynchronous layer needs to resume a queued fetch (a weak pointer to
// it); it is kept only while the fetch waits. Thread-safe: every method holds one mutex for a
// few deque operations, so a fetch ending on one io thread hands its slot to a fetch queued on
// another.
template <class Payload>
class OriginQueue {
 public:
  struct Entered {
    OriginEntry entry;
    std::uint64_t ticket = 0;  // for withdraw(); set when queued
  };
  struct Handoff {
    Payload payload;
    cache::Duration waited;  // from enter() to the handoff
  };

  Entered enter(Payload payload, cache::TimePoint now, OriginLimits limits) {
    std::lock_guard lock(mutex_);
    // A free slot is taken even with fetches queued: that happens only after a reload raised
    // the limit, and the queued ones get the next slots that end.
    if (limits.concurrency <= 0 || in_flight_ < limits.concurrency) {
      ++in_flight_;
      return {OriginEntry::started};
    }
    if (waiting_.size() >= limits.queue) return {OriginEntry::full};
    const std::uint64_t ticket = next_ticket_++;
    waiting_.push_back({ticket, now, std::move(payload)});
    return {OriginEntry::queued, ticket};
  }

  // The holder of a slot is done. The oldest queued fetch takes the slot over and is returned
  // (its wait ended: the caller resumes it), unless the limit was lowered below the fetches in
  // flight since, in which case the slot is given up.
  std::optional<Handoff> release(cache::TimePoint now, OriginLimits limits) {
    std::lock_guard lock(mutex_);
    const bool over = limits.concurrency > 0 && in_flight_ > limits.concurrency;
    if (waiting_.empty() || over) {
      if (in_flight_ > 0) --in_flight_;
      return std::nullopt;
    }
    Waiting next = std::move(waiting_.front());
    waiting_.pop_front();
    return Handoff{std::move(next.payload), now - next.since};
  }

  // A queued fetch gives up (its origin_queue_timeout). False when it is no longer queued: a
  // handoff took it out first, and its resumption is on its way.
  bool withdraw(std::uint64_t ticket) {
    std::lock_guard lock(mutex_);
    // Tickets grow with arrival order, so the queue is sorted by them.
    const auto found = std::lower_bound(
        waiting_.begin(), waiting_.end(), ticket,
        [](const Waiting& waiting, std::uint64_t t) { return waiting.ticket < t; });
    if (found == waiting_.end() || found->ticket != ticket) return false;
    waiting_.erase(found);
    return true;
  }

  int in_flight() const {
    std::lock_guard lock(mutex_);
    return in_flight_;
  }
  std::size_t depth() const {
    std::lock_guard lock(mutex_);
    return waiting_.size();
  }

 private:
  struct Waiting {
    std::uint64_t ticket;
    cache::TimePoint since;
    Payload payload;
  };

  mutable std::mutex mutex_;
  int in_flight_ = 0;
  std::deque<Waiting> waiting_;
  std::uint64_t next_ticket_ = 1;
};

}  // namespace corral::stampede
