// Which Sentinels have announced a failover that has not ended yet, so that one Sentinel's abort
// (a non-leader's -failover-abort-not-elected) does not end a hold another Sentinel's failover
// needs. Pure bookkeeping on the times given; the watch owns one.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>

namespace corral::upstream {

class AnnouncedFailovers {
 public:
  using Clock = std::chrono::steady_clock;

  // An announcement lapses `lapse` after a Sentinel's last one (its +switch-master or abort may
  // have been lost): failover_hold, the longest a command waits for a failover anyway.
  explicit AnnouncedFailovers(Clock::duration lapse) : lapse_(lapse) {}

  // Sentinel `sentinel` announced (a step of) a failover at `now`.
  void announced(std::size_t sentinel, Clock::time_point now);
  // Sentinel `sentinel`'s failover was aborted at `now`. True when no other Sentinel's announced
  // failover is still in progress: the hold may end.
  bool aborted(std::size_t sentinel, Clock::time_point now);
  // A new primary is in use (or the one there was confirmed): every announced failover is over.
  void ended() { since_.clear(); }
  // Whether any Sentinel's announcement has not ended or lapsed at `now`.
  bool in_progress(Clock::time_point now);

 private:
  void forget_lapsed(Clock::time_point now);

  Clock::duration lapse_;
  std::map<std::size_t, Clock::time_point> since_;  // by Sentinel: its last announcement
};

}  // namespace corral::upstream
