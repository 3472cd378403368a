// Time source for every TTL, grace and XFetch decision: steady time behind an interface so tests
// drive it by hand (ManualClock) and production reads std::chrono::steady_clock (SystemClock),
// once per event-loop turn where a TurnTime is open.
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

// One clock reading shared by everything a thread does in one synchronous stretch of work (a
// client session handling the requests of one read): SystemClock answers with it instead of
// reading the clock again (a clock read cost more than the hash lookup of a cache hit).
// Staleness bound: the reading is taken when the scope opens and nothing inside it awaits, so a
// now() inside is late by at most the scope's own run time (one read buffer's requests, plus any
// time the thread was preempted); an entry is served at most that long past its expiry, no
// longer than its reply would sit in the output buffer anyway. Scopes nest: an inner one keeps
// the outer one's reading, so now() never goes backwards on a thread.
class TurnTime {
 public:
  TurnTime() : outer_(open_) {
    if (open_ == nullptr) {
      now_ = SteadyClock::now();
      open_ = &now_;
    }
  }
  ~TurnTime() { open_ = outer_; }
  TurnTime(const TurnTime&) = delete;
  TurnTime& operator=(const TurnTime&) = delete;

  // The reading every SystemClock::now() on this thread returns while the scope is open.
  TimePoint now() const { return *open_; }
  // This thread's open turn's reading, or null outside every scope.
  static const TimePoint* current() { return open_; }

 private:
  static inline thread_local const TimePoint* open_ = nullptr;
  const TimePoint* outer_;
  TimePoint now_{};
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override {
    const TimePoint* turn = TurnTime::current();
    return turn != nullptr ? *turn : SteadyClock::now();
  }
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
