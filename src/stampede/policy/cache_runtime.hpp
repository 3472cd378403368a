// Process-wide caching state shared by every io thread: the store, the policies (swappable on
// SIGHUP), per-policy protection state (breaker, backoff, concurrency) and counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/clock.hpp"
#include "cache/random.hpp"
#include "cache/store.hpp"
#include "config/settings.hpp"
#include "stampede/core/policy_match.hpp"
#include "stampede/core/tag_epochs.hpp"
#include "stampede/fleet/fleet_wakeups.hpp"
#include "stampede/policy/policy_stats.hpp"
#include "stampede/tracking/tracking_gaps.hpp"
#include "upstream/invalidation_mark.hpp"

namespace prometheus {
class Collectable;
class Registry;
}  // namespace prometheus

namespace corral::stampede {

class HotCache;
class PolicyRuntime;  // breaker, backoff table, origin concurrency, flights of one policy

// An immutable snapshot of the configured policies; replaced whole on reload.
struct PolicySet {
  std::vector<config::PolicySettings> settings;
  PolicyMatcher matcher;
  std::vector<std::shared_ptr<PolicyRuntime>> runtimes;  // kept across reloads by prefix
  std::vector<std::shared_ptr<PolicyStats>> stats;       // kept across reloads by prefix
  std::vector<std::uint32_t> command_masks;  // per policy: its `commands` (see cached_command.hpp)

  // Index of the policy whose prefix is the longest prefix of `key`.
  std::optional<std::size_t> match(std::string_view key) const { return matcher.match(key); }
  // The settings of that policy, or null when the key is not cached.
  const config::PolicySettings* find(std::string_view key) const {
    const auto index = matcher.match(key);
    return index ? &settings[*index] : nullptr;
  }
};

class CacheRuntime {
 public:
  CacheRuntime(const config::Settings& settings, const cache::Clock& clock,
               std::shared_ptr<prometheus::Registry> registry);
  ~CacheRuntime();

  // The current policies (lock-free for readers; a reload publishes a new snapshot).
  std::shared_ptr<const PolicySet> policies() const;
  // Replaces the policies. Per-policy state and counters carry over for prefixes that stay;
  // entries already cached keep their windows and follow the new TTLs on their next store.
  void reload(const std::vector<config::PolicySettings>& policies);

  cache::Store& store() { return store_; }
  const cache::Store& store() const { return store_; }
  const cache::Clock& clock() const { return clock_; }
  // Tag purges (CORRAL.INVALIDATE TAG) and the generation entries of tagged responses record.
  TagEpochs& tags() { return tags_; }
  const TagEpochs& tags() const { return tags_; }
  // Bumped by every reload; io threads compare it (a plain atomic load) with the snapshot they
  // hold, so a request costs no shared_ptr reference count traffic.
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }

  // Counters of the policy with exactly this prefix (with its breaker state and origin fetches
  // in flight), for CORRAL.STATS / CORRAL.INFO; nullopt when no policy has it.
  std::optional<PolicyStatsSnapshot> stats_for(std::string_view prefix) const;
  std::vector<PolicyStatsSnapshot> all_stats() const;
  // Drops every cached reply of `user_key` (superseding fills in flight) and counts it for the
  // key's policy. Returns the entries dropped.
  std::size_t invalidate_key(std::string_view user_key, InvalidationSource source);
  // invalidate_key for a tracking listener of the calling io thread alone (see
  // cache::Store::invalidate_filled_here); counted when `counts`.
  std::size_t invalidate_key_filled_here(std::string_view user_key, InvalidationSource source,
                                         bool counts);
  // Drops every key starting with `prefix`; counted once for each policy it touches (the one
  // the prefix falls under, and those whose own prefix starts with it).
  std::size_t invalidate_prefix(std::string_view prefix, InvalidationSource source);
  // Drops every key under one of `prefixes` that `in_scope` accepts (a cluster node's slots, the
  // slots a failover moved): a scan of the whole store, for rare events. Each policy counts the
  // entries it lost.
  std::size_t invalidate_in_scope(const std::vector<std::string>& prefixes,
                                  const std::function<bool(std::string_view)>& in_scope,
                                  InvalidationSource source);
  // Fleet fetches waiting for another process's refresh, woken by tracking messages.
  FleetWakeups& fleet_wakeups() { return fleet_wakeups_; }
  // Keys whose tracking link is down or silent: not served from cache until it is back.
  TrackingGaps& tracking_gaps() { return tracking_gaps_; }
  // Hot-key caching (hot_keys.cache on a single Redis); null when off.
  HotCache* hot() { return hot_.get(); }
  const HotCache* hot() const { return hot_.get(); }
  const TrackingGaps& tracking_gaps() const { return tracking_gaps_; }
  // When the tracking link last said something: fills from replicas must have seen it.
  upstream::InvalidationMark& invalidation_mark() { return invalidation_mark_; }
  // Counts an invalidation of `user_key` by `source` for the key's policy (nothing when none).
  void count_invalidation(std::string_view user_key, InvalidationSource source,
                          std::uint64_t count = 1);
  // Counts one invalidation by `source` for every policy (a flush drops them all).
  void count_invalidation_all(InvalidationSource source);

  // The Prometheus view of the caching layer: per-policy series and the store's totals. The
  // registry of prometheus-cpp 1.0 cannot hold a custom Collectable, so whoever serializes the
  // registry also collects this one (hold it weakly: it reads this runtime).
  std::shared_ptr<prometheus::Collectable> collectable() const { return collector_; }

  // One io thread runs the store sweeper: the first to claim it (release when it stops).
  bool claim_sweeper() { return !sweeper_claimed_.exchange(true, std::memory_order_acq_rel); }
  void release_sweeper() { sweeper_claimed_.store(false, std::memory_order_release); }

 private:
  std::shared_ptr<const PolicySet> make_policy_set(
      const std::vector<config::PolicySettings>& policies, const PolicySet* previous) const;
  cache::Store store_;
  TagEpochs tags_;
  const cache::Clock& clock_;
  std::shared_ptr<prometheus::Registry> registry_;
  mutable std::mutex reload_mutex_;
  std::shared_ptr<const PolicySet> policies_;  // read with std::atomic_load
  std::atomic<std::uint64_t> version_{0};
  std::atomic<bool> sweeper_claimed_{false};
  FleetWakeups fleet_wakeups_;
  TrackingGaps tracking_gaps_;
  upstream::InvalidationMark invalidation_mark_;
  std::unique_ptr<HotCache> hot_;
  std::shared_ptr<prometheus::Collectable> collector_;
};

}  // namespace corral::stampede
