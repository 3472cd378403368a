// Time source for every TTL, grace and XFetch decision: steady time behind an interface so tests
// drive it by hand (ManualClock) and production reads std::chrono::steady_clock (SystemClock).
#pragma once

#include <atomic>
#include <chrono>

namespace corral::cache {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using Duration = SteadyClock::duration;  // nanoseconds

// Contract: now() is monotonic (never goes backwards) and safe to call from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return SteadyClock::now(); }
  // One shared instance: it has no state, so every layer may hold a reference to it.
  static const SystemClock& instance() {
    static const SystemClock clock;
    return clock;
  }
};

// A clock that moves only when told to. Starts well after the epoch so that `now() - d` in tests
// never underflows. Reads and advances are atomic so a test may advance it while other threads
// read it.
class ManualClock final : public Clock {
 public:
  ManualClock() = default;
  explicit ManualClock(TimePoint start) : ticks_(start.time_since_epoch().count()) {}

  TimePoint now() const override {
    return TimePoint(Duration(ticks_.load(std::memory_order_acquire)));
  }
  void advance(Duration d) {
    // A negative step would break the monotonic contract.
    if (d.count() > 0) ticks_.fetch_add(d.count(), std::memory_order_acq_rel);
  }

 private:
  static constexpr Duration kStart = std::chrono::hours(24 * 365);
  std::atomic<Duration::rep> ticks_{kStart.count()};
};

}  // namespace corral::cache
