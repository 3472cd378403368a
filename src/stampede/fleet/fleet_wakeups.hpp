// Fleet mode: fetches waiting for another process's refresh of a key, woken when the tracking
// invalidation of that key (the winner's write) reaches this process, instead of polling Redis.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace corral::stampede {

// Process-wide and thread-safe: waiters register from any io thread, the invalidation listener
// notifies from its own. A wake callback runs on the notifying thread, outside the lock, and must
// only hand the wake over (post to the waiter's executor); it may run once after its Watch is
// gone, so it must hold its waiter weakly.
class FleetWakeups {
 public:
  using Wake = std::function<void()>;

  // Registered while alive.
  class Watch {
   public:
    Watch(FleetWakeups& owner, std::string key, Wake wake);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    FleetWakeups& owner_;
    std::string key_;
    std::uint64_t id_;
  };

  // The invalidation of `key` arrived: wake its waiters.
  void notify(std::string_view key);
  // Tracking was (re)established or Redis was flushed: every waiter should look again.
  void notify_all();

  // The tracking connections (one, or one per primary of a cluster: a key's invalidation comes
  // from its own primary's) come and go, and deliver invalidations while live.
  void source_added();
  void source_removed();
  void source_live(bool live);
  // True while every tracking connection delivers invalidations: waiters may then poll rarely.
  bool live() const;

  std::size_t watching() const;

 private:
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  struct Entry {
    std::uint64_t id;
    Wake wake;
  };

  mutable std::mutex mutex_;
  std::unordered_multimap<std::string, Entry, KeyHash, std::equal_to<>> waiters_;
  std::uint64_t next_id_ = 0;
  int sources_ = 0;
  int live_sources_ = 0;
};

}  // namespace corral::stampede
