// A Sentinel's failover is in progress from its first announcement until its abort, a switch,
// or `lapse` after its last announcement.
#include "upstream/sentinel/announced_failovers.hpp"

#include <iterator>

namespace corral::upstream {

void AnnouncedFailovers::announced(std::size_t sentinel, Clock::time_point now) {
  since_[sentinel] = now;
}

bool AnnouncedFailovers::aborted(std::size_t sentinel, Clock::time_point now) {
  since_.erase(sentinel);
  return !in_progress(now);
}

bool AnnouncedFailovers::in_progress(Clock::time_point now) {
  forget_lapsed(now);
  return !since_.empty();
}

void AnnouncedFailovers::forget_lapsed(Clock::time_point now) {
  for (auto it = since_.begin(); it != since_.end();) {
    it = now - it->second >= lapse_ ? since_.erase(it) : std::next(it);
  }
}

}  // namespace corral::upstream
