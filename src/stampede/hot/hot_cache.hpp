// Process-wide state of hot-key caching (hot_keys.cache): the hot set, the store of hot keys'
// replies (bounded by max_bytes), the tracking link that keeps them coherent, and counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cache/store.hpp"
#include "config/settings.hpp"
#include "stampede/core/hot_set.hpp"
#include "stampede/hot/hot_link_name.hpp"

namespace corral::stampede {

class HotKeys;
struct PolicySet;

enum class HotEviction : std::uint8_t { cooled, invalidated, flushed };
inline constexpr std::size_t kHotEvictionReasons = 3;

class HotCache {
 public:
  explicit HotCache(const config::HotKeySettings& settings);

  const config::HotKeySettings& settings() const { return settings_; }
  cache::Store& store() { return store_; }
  const cache::Store& store() const { return store_; }

  // The current hot set; io threads compare version() (one relaxed load) with the one they hold.
  std::shared_ptr<const HotSet> keys() const;
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // A detection window closed: the hot set becomes its read keys past min_rate outside every
  // policy (at most max_keys), and the cached replies of keys that left it go (cooled).
  void choose(const HotKeys& detected, const PolicySet& policies);
  void publish(std::shared_ptr<const HotSet> next);

  // The invalidation links fills are tracked for, one per server ("" for a single Redis,
  // "host:port" for each cluster primary): a fill connection to that server sends CLIENT TRACKING
  // on REDIRECT <client_id> before its reads (Redis redirects only to a client of the same server).
  // Every change of any link (a new session, or none) drops every hot entry and bumps the
  // generation, so a fill sent under another link is not stored: the keys it tracked report to a
  // connection that is gone. All, not the server's keys only: the store does not record which
  // server filled an entry, and a link changes rarely (a reconnect, a failover), after which hot
  // keys refill in one read each.
  struct Link {
    std::uint64_t generation = 0;  // generation() when link() answered
    std::string client_id;
  };
  // `server` names the server within one upstream deployment: hot_link_name() tells apart the
  // deployments a reload has side by side (two single Redis servers are both "").
  void link_up(const std::string& server, std::string client_id);
  void link_down(const std::string& server);
  std::optional<Link> link(const std::string& server) const;  // nullopt while none tracks
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // A slot moved to another node (a reshard, a failover): its keys' entries were tracked by the
  // node that no longer holds them.
  void drop_matching(const std::function<bool(std::string_view)>& matches);

  // A write (tracking message, or one through Corral) to `key`; superseding fills in flight.
  void invalidate(std::string_view key);
  // Everything goes (FLUSHALL, tracking re-established).
  void flush();

  void count_hit() { hits_.fetch_add(1, std::memory_order_relaxed); }
  void count_fill(bool stored) {
    (stored ? stored_ : unstored_).fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  std::uint64_t fills(bool stored) const {
    return (stored ? stored_ : unstored_).load(std::memory_order_relaxed);
  }
  std::uint64_t evictions(HotEviction reason) const {
    return evictions_[static_cast<std::size_t>(reason)].load(std::memory_order_relaxed);
  }

 private:
  void count_eviction(HotEviction reason, std::size_t n) {
    evictions_[static_cast<std::size_t>(reason)].fetch_add(n, std::memory_order_relaxed);
  }

  config::HotKeySettings settings_;
  cache::Store store_;
  mutable std::mutex mutex_;  // keys_ and links_
  std::shared_ptr<const HotSet> keys_;
  std::map<std::string, std::string, std::less<>> links_;  // client id by server
  std::atomic<std::uint64_t> version_{0};
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::uint64_t> hits_{0};
  std::atomic<std::uint64_t> stored_{0};
  std::atomic<std::uint64_t> unstored_{0};
  std::array<std::atomic<std::uint64_t>, kHotEvictionReasons> evictions_{};
};

}  // namespace corral::stampede
