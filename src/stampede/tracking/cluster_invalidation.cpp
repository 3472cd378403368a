// Follows the topology's version on a short timer (the map changes rarely; a listener started a
// fraction of a second late only delays its flush) and keeps one listener per primary.
#include "stampede/tracking/cluster_invalidation.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include "cache/store.hpp"
#include "config/values.hpp"
#include "stampede/hot/hot_cache.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "stampede/tracking/invalidation_listener.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/cluster/topology.hpp"

namespace corral::stampede {

namespace asio = boost::asio;

namespace {
constexpr std::chrono::milliseconds kFollowInterval{200};

// The keys the node at `endpoint` holds now, by the topology's latest map.
InvalidationListener::KeyScope node_scope(std::shared_ptr<const upstream::Topology> topology,
                                          config::Endpoint endpoint) {
  return [topology = std::move(topology), endpoint = std::move(endpoint)] {
    const auto map = topology->current();
    auto owned = map ? upstream::slots_owned_by(*map, endpoint)
                     : upstream::SlotSet(upstream::kSlotCount, true);
    return [owned = std::move(owned)](std::string_view key) {
      return static_cast<bool>(owned[upstream::key_slot(key)]);
    };
  };
}
}  // namespace

ClusterInvalidation::ClusterInvalidation(const asio::any_io_executor& executor,
                                         const config::UpstreamSettings& upstream,
                                         std::shared_ptr<const upstream::Topology> topology,
                                         CacheRuntime& runtime,
                                         std::function<void(std::string_view)> invalidated,
                                         int thread, HotLinkNaming naming)
    : executor_(executor),
      upstream_(upstream),
      topology_(std::move(topology)),
      runtime_(runtime),
      invalidated_(std::move(invalidated)),
      timer_(executor),
      thread_(thread),
      naming_(std::move(naming)) {}

void ClusterInvalidation::start() {
  // Fills on this thread record it, so that this thread's listeners drop them (and only them).
  if (thread_ < cache::Store::kMaxFillers) {
    cache::Store::set_thread_filler(static_cast<std::uint8_t>(thread_));
  }
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->follow(); }, asio::detached);
}

void ClusterInvalidation::stop() {
  stopped_ = true;
  timer_.cancel();
  std::lock_guard lock(mutex_);
  for (auto& [key, listener] : listeners_) listener->stop();
  listeners_.clear();
}

void ClusterInvalidation::restart() {
  std::lock_guard lock(mutex_);
  for (auto& [key, listener] : listeners_) listener->restart();
}

asio::awaitable<void> ClusterInvalidation::follow() {
  auto self = shared_from_this();
  while (!stopped_) {
    if (topology_->version() != version_) sync();
    timer_.expires_after(kFollowInterval);
    boost::system::error_code ignored;
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

void ClusterInvalidation::sync() {
  version_ = topology_->version();
  const auto map = topology_->current();
  if (!map) return;
  if (seen_ && thread_ == 0) drop_slots(upstream::slots_changing_owner(*seen_, *map));
  seen_ = map;
  std::map<std::string, config::Endpoint> primaries;
  for (int p : map->primaries) {
    const auto& e = map->nodes[p].endpoint;
    primaries.emplace(config::format_endpoint(e), e);
  }
  std::lock_guard lock(mutex_);
  for (auto it = listeners_.begin(); it != listeners_.end();) {
    if (primaries.count(it->first) != 0) {
      ++it;
      continue;
    }
    retired_reconnects_.fetch_add(it->second->reconnects(), std::memory_order_relaxed);
    it->second->stop();
    it = listeners_.erase(it);
  }
  for (const auto& [key, endpoint] : primaries) {
    if (listeners_.count(key) != 0) continue;
    auto settings = upstream_;
    settings.servers = {endpoint};
    settings.cluster = false;
    // Thread 0's listener of each node is also the node's hot-key link: hot entries live in one
    // store for the process, so one link per node is enough, as on a single Redis.
    InvalidationListener::NodeRole role{node_scope(topology_, endpoint),
                                        thread_ < cache::Store::kMaxFillers, thread_ == 0,
                                        thread_ == 0, key};
    auto listener = std::make_shared<InvalidationListener>(executor_, settings, runtime_,
                                                           invalidated_, std::move(role), naming_);
    listener->start();
    listeners_.emplace(key, std::move(listener));
  }
}

void ClusterInvalidation::drop_slots(const upstream::SlotSet& slots) {
  const auto moved = static_cast<std::size_t>(std::count(slots.begin(), slots.end(), true));
  if (moved == 0) return;
  const auto in_moved_slot = [&slots](std::string_view key) {
    return static_cast<bool>(slots[upstream::key_slot(key)]);
  };
  // A hot entry of a moved slot was tracked by the node that no longer holds the key.
  if (auto* hot = runtime_.hot()) hot->drop_matching(in_moved_slot);
  const auto prefixes = tracked_prefixes(*runtime_.policies());
  if (prefixes.empty()) return;
  const std::size_t dropped =
      runtime_.invalidate_in_scope(prefixes, in_moved_slot, InvalidationSource::tracking);
  spdlog::info("{} slots changed owner: {} cached entries of theirs dropped", moved, dropped);
}

bool ClusterInvalidation::tracking() const {
  std::lock_guard lock(mutex_);
  if (listeners_.empty()) return false;
  for (const auto& [key, listener] : listeners_) {
    if (!listener->tracking()) return false;
  }
  return true;
}

bool ClusterInvalidation::wanted() const {
  std::lock_guard lock(mutex_);
  for (const auto& [key, listener] : listeners_) {
    if (listener->wanted()) return true;
  }
  return false;
}

std::uint64_t ClusterInvalidation::reconnects() const {
  std::lock_guard lock(mutex_);
  std::uint64_t total = retired_reconnects_.load(std::memory_order_relaxed);
  for (const auto& [key, listener] : listeners_) total += listener->reconnects();
  return total;
}

std::size_t ClusterInvalidation::listeners() const {
  std::lock_guard lock(mutex_);
  return listeners_.size();
}

}  // namespace corral::stampede
