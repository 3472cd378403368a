// Flight payloads: waiter lists shared across threads, completed once.
#include "stampede/read/flight.hpp"

#include <algorithm>

namespace corral::stampede {

bool Flight::add(const std::shared_ptr<FlightWaiter>& waiter) {
  std::lock_guard lock(mutex_);
  if (done_) return false;
  if (waiters_.size() >= compact_at_) {
    // Waiters that timed out stay listed until the flight ends; without this a fetch that
    // hangs until the origin's timeout would collect every request that ever timed out on it.
    std::erase_if(waiters_, [](const auto& w) { return w.expired(); });
    compact_at_ = std::max<std::size_t>(64, waiters_.size() * 2);
  }
  waiters_.push_back(waiter);
  return true;
}

void Flight::complete(FlightResult flight_result) {
  std::vector<std::weak_ptr<FlightWaiter>> waiters;
  {
    std::lock_guard lock(mutex_);
    if (done_) return;
    result = std::move(flight_result);
    done_ = true;
    waiters.swap(waiters_);
  }
  // Not under the lock: waiters post to their threads, which may join other flights meanwhile.
  // The shared_ptr to this flight keeps `result` alive for them.
  const std::shared_ptr<Flight> self = shared_from_this();
  for (const auto& weak : waiters) {
    if (auto waiter = weak.lock()) {
      FlightWaiter* raw = waiter.get();
      raw->flight_done(std::move(waiter), self);
    }
  }
}

}  // namespace corral::stampede
