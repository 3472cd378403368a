// The forwarded pause's end, one atomic read on the paths that consult it (timeouts, probes).
#include "upstream/server_pause.hpp"

namespace corral::upstream {

namespace {
std::int64_t nanoseconds(ServerPause::Clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
}
}  // namespace

void ServerPause::forwarded(Clock::time_point until) {
  const std::int64_t wanted = nanoseconds(until);
  std::int64_t current = until_ns_.load(std::memory_order_relaxed);
  while (current < wanted &&
         !until_ns_.compare_exchange_weak(current, wanted, std::memory_order_relaxed)) {
  }
}

void ServerPause::unpaused() { until_ns_.store(0, std::memory_order_relaxed); }

bool ServerPause::in_force(Clock::time_point now) const {
  return nanoseconds(now) < until_ns_.load(std::memory_order_relaxed);
}

ServerPause& server_pause() {
  static ServerPause pause;
  return pause;
}

}  // namespace corral::upstream
