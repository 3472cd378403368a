// Process-wide caching state: policy snapshots (swapped whole on reload, per-policy state carried
// over by prefix), counters lookup for admin commands, and the metrics collector.
#include "stampede/policy/cache_runtime.hpp"

#include "stampede/versioned/version_key.hpp"

#include <algorithm>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "stampede/hot/hot_cache.hpp"
#include "stampede/policy/cache_collector.hpp"
#include "stampede/policy/policy_runtime.hpp"
#include "stampede/read/cached_command.hpp"

namespace corral::stampede {

CacheRuntime::CacheRuntime(const config::Settings& settings, const cache::Clock& clock,
                           std::shared_ptr<prometheus::Registry> registry)
    : store_(settings.cache),
      clock_(clock),
      registry_(std::move(registry)),
      policies_(make_policy_set(settings.policies, nullptr)),
      collector_(std::make_shared<CacheCollector>(*this)) {
  if (settings.hot_keys.cache) {
    hot_ = std::make_unique<HotCache>(settings.hot_keys);
  }
}

CacheRuntime::~CacheRuntime() = default;

std::shared_ptr<const PolicySet> CacheRuntime::policies() const {
  return std::atomic_load(&policies_);
}

std::shared_ptr<const PolicySet> CacheRuntime::make_policy_set(
    const std::vector<config::PolicySettings>& policies, const PolicySet* previous) const {
  std::unordered_map<std::string_view, std::size_t> old_index;
  if (previous) {
    for (std::size_t i = 0; i < previous->settings.size(); ++i) {
      old_index.emplace(previous->settings[i].prefix, i);
    }
  }
  auto set = std::make_shared<PolicySet>();
  set->settings = policies;
  set->matcher = PolicyMatcher(std::span<const config::PolicySettings>(set->settings));
  for (const auto& policy : policies) {
    const auto found = old_index.find(policy.prefix);
    if (found != old_index.end()) {
      auto runtime = previous->runtimes[found->second];
      runtime->update(policy);
      set->runtimes.push_back(std::move(runtime));
      set->stats.push_back(previous->stats[found->second]);
    } else {
      set->runtimes.push_back(std::make_shared<PolicyRuntime>(policy));
      set->stats.push_back(std::make_shared<PolicyStats>(policy.prefix));
    }
    set->command_masks.push_back(command_mask(policy.commands));
  }
  return set;
}

void CacheRuntime::reload(const std::vector<config::PolicySettings>& policies) {
  std::lock_guard lock(reload_mutex_);
  const auto previous = std::atomic_load(&policies_);
  auto next = make_policy_set(policies, previous.get());
  std::atomic_store(&policies_, std::move(next));
  version_.fetch_add(1, std::memory_order_acq_rel);
  // Writes to keys of a dropped prefix no longer invalidate them, so their entries must not be
  // served again if the prefix comes back.
  const auto current = std::atomic_load(&policies_);
  for (const auto& old : previous->settings) {
    const bool kept = std::any_of(current->settings.begin(), current->settings.end(),
                                  [&](const auto& p) { return p.prefix == old.prefix; });
    if (!kept) {
      const auto dropped = store_.invalidate_prefix(old.prefix);
      spdlog::info("policy '{}' removed: {} cached entries dropped", old.prefix, dropped);
    }
  }
}

std::optional<PolicyStatsSnapshot> CacheRuntime::stats_for(std::string_view prefix) const {
  const auto set = policies();
  for (std::size_t i = 0; i < set->settings.size(); ++i) {
    if (set->settings[i].prefix != prefix) continue;
    auto snapshot = set->stats[i]->snapshot();
    snapshot.breaker_state = static_cast<int>(set->runtimes[i]->breaker()->state());
    snapshot.origin_in_flight = set->runtimes[i]->fetches_in_flight();
    snapshot.origin_queued = set->runtimes[i]->fetches_queued();
    return snapshot;
  }
  return std::nullopt;
}

std::vector<PolicyStatsSnapshot> CacheRuntime::all_stats() const {
  const auto set = policies();
  std::vector<PolicyStatsSnapshot> out;
  for (const auto& policy : set->settings) {
    if (auto snapshot = stats_for(policy.prefix)) out.push_back(std::move(*snapshot));
  }
  return out;
}

void CacheRuntime::count_invalidation(std::string_view user_key, InvalidationSource source,
                                      std::uint64_t count) {
  const auto set = policies();
  if (const auto index = set->match(user_key)) set->stats[*index]->invalidation(source, count);
}

std::size_t CacheRuntime::invalidate_key(std::string_view user_key, InvalidationSource source) {
  count_invalidation(user_key, source);
  if (hot_) hot_->invalidate(user_key);
  std::size_t dropped = store_.invalidate(user_key);
  // `feat:U1:v3` changed: readers of `feat:U1` may have cached it (versioned policies).
  const auto reader_key = unversioned_key(user_key);
  if (reader_key.size() != user_key.size()) {
    const auto set = policies();
    const auto index = set->match(user_key);
    if (index && set->settings[*index].versioned) dropped += store_.invalidate(reader_key);
  }
  return dropped;
}

std::size_t CacheRuntime::invalidate_key_filled_here(std::string_view user_key,
                                                     InvalidationSource source, bool counts) {
  if (counts) count_invalidation(user_key, source);
  if (hot_) hot_->invalidate(user_key);
  std::size_t dropped = store_.invalidate_filled_here(user_key);
  const auto reader_key = unversioned_key(user_key);
  if (reader_key.size() != user_key.size()) {
    const auto set = policies();
    const auto index = set->match(user_key);
    if (index && set->settings[*index].versioned)
      dropped += store_.invalidate_filled_here(reader_key);
  }
  return dropped;
}

std::size_t CacheRuntime::invalidate_prefix(std::string_view prefix, InvalidationSource source) {
  const auto set = policies();
  const auto covering = set->match(prefix);
  for (std::size_t i = 0; i < set->settings.size(); ++i) {
    if (covering == i || set->settings[i].prefix.starts_with(prefix)) {
      set->stats[i]->invalidation(source);
    }
  }
  return store_.invalidate_prefix(prefix);
}

std::size_t CacheRuntime::invalidate_in_scope(const std::vector<std::string>& prefixes,
                                              const std::function<bool(std::string_view)>& in_scope,
                                              InvalidationSource source) {
  const auto set = policies();
  std::vector<std::uint64_t> dropped(set->settings.size(), 0);
  const std::size_t removed = store_.invalidate_matching([&](std::string_view key) {
    const bool under = std::any_of(prefixes.begin(), prefixes.end(),
                                   [key](const std::string& p) { return key.starts_with(p); });
    if (!under || !in_scope(key)) return false;
    if (const auto index = set->match(key)) ++dropped[*index];
    return true;
  });
  for (std::size_t i = 0; i < dropped.size(); ++i) {
    if (dropped[i] != 0) set->stats[i]->invalidation(source, dropped[i]);
  }
  return removed;
}

void CacheRuntime::count_invalidation_all(InvalidationSource source) {
  const auto set = policies();
  for (const auto& stats : set->stats) stats->invalidation(source);
}

}  // namespace corral::stampede
