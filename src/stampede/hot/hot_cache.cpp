// HotCache: the hot set's swaps and the link changes, each dropping what may no longer be
// coherent.
#include "stampede/hot/hot_cache.hpp"

#include <algorithm>

#include "cache/cache_key.hpp"
#include "stampede/core/hot_keys.hpp"
#include "stampede/policy/cache_runtime.hpp"

namespace corral::stampede {

namespace {
// The budget is per shard and a reply must fit in one: at most 8 shards, and at least 1 MiB each
// (a single shard below 2 MiB), so that a small max_bytes still takes replies of any size under it.
constexpr std::uint64_t kMaxHotShards = 8;
constexpr std::uint64_t kMinShardBytes = 1024 * 1024;

config::CacheSettings store_settings(const config::HotKeySettings& settings) {
  config::CacheSettings store;
  store.max_memory = settings.max_bytes;
  store.shards = static_cast<int>(
      std::clamp<std::uint64_t>(settings.max_bytes / kMinShardBytes, 1, kMaxHotShards));
  return store;
}
}  // namespace

HotCache::HotCache(const config::HotKeySettings& settings)
    : settings_(settings), store_(store_settings(settings)), keys_(std::make_shared<HotSet>()) {}

std::shared_ptr<const HotSet> HotCache::keys() const {
  std::lock_guard lock(mutex_);
  return keys_;
}

void HotCache::choose(const HotKeys& detected, const PolicySet& policies) {
  const auto report = detected.top(detected.options().capacity, HotKeyKind::read);
  auto chosen = choose_hot_keys(
      report, settings_.min_rate, settings_.max_keys,
      [&policies](std::string_view key) { return policies.match(key).has_value(); });
  publish(std::make_shared<const HotSet>(std::move(chosen)));
}

void HotCache::publish(std::shared_ptr<const HotSet> next) {
  std::shared_ptr<const HotSet> previous;
  {
    std::lock_guard lock(mutex_);
    previous = std::exchange(keys_, next);
  }
  version_.fetch_add(1, std::memory_order_acq_rel);
  std::size_t cooled = 0;
  previous->for_each([&](std::string_view key) {
    if (!next->contains(key)) cooled += store_.invalidate(key);
  });
  count_eviction(HotEviction::cooled, cooled);
}

void HotCache::link_up(const std::string& server, std::string client_id) {
  {
    std::lock_guard lock(mutex_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    links_[server] = std::move(client_id);
  }
  flush();
}

void HotCache::link_down(const std::string& server) {
  {
    std::lock_guard lock(mutex_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    links_.erase(server);
  }
  flush();
}

std::optional<HotCache::Link> HotCache::link(const std::string& server) const {
  std::lock_guard lock(mutex_);
  const auto found = links_.find(server);
  if (found == links_.end()) return std::nullopt;
  return Link{generation_.load(std::memory_order_relaxed), found->second};
}

void HotCache::drop_matching(const std::function<bool(std::string_view)>& matches) {
  count_eviction(HotEviction::flushed, store_.invalidate_matching(matches));
}

void HotCache::invalidate(std::string_view key) {
  count_eviction(HotEviction::invalidated, store_.invalidate(key));
}

void HotCache::flush() { count_eviction(HotEviction::flushed, store_.clear()); }

}  // namespace corral::stampede
