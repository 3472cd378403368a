// Sharding, locking and fill tickets around the per-shard tables (see shard_table.cpp for the
// layout and SIEVE).
#include "cache/store.hpp"

#include <algorithm>
#include <cassert>

#include "cache/shard_table.hpp"

namespace corral::cache {
namespace {

// Fill tickets are per (shard, slot) rather than per key so that invalidating a key that is not
// cached costs no allocation; a false "superseded" needs another key of the same slot to be
// invalidated during the fetch, and only costs one uncached result.
constexpr std::size_t kGenerationSlots = 64;
// Per filler, coarser slots (a shard holds kMaxFillers of them once any filler invalidated).
constexpr std::size_t kFillerSlots = 8;
// A ticket: the filler in the top byte, the generation sum below.
constexpr int kFillerShift = 56;
constexpr std::uint64_t kGenerationMask = (std::uint64_t{1} << kFillerShift) - 1;

std::size_t generation_slot(std::size_t hash) { return (hash >> 16) % kGenerationSlots; }

thread_local std::uint8_t this_thread_filler = Store::kNoFiller;

std::uint64_t encode_ticket(std::uint8_t filler, std::uint64_t generation) {
  return (std::uint64_t{filler} << kFillerShift) | (generation & kGenerationMask);
}
std::uint8_t ticket_filler(std::uint64_t ticket) {
  return static_cast<std::uint8_t>(ticket >> kFillerShift);
}

}  // namespace

// Aligned to a cache line so two shards' mutexes never share one.
struct alignas(64) Store::Shard {
  Shard(std::uint64_t budget, detail::StoreCounters& counters) : table(budget, counters) {}

  std::uint64_t ticket(std::size_t hash, std::uint8_t filler) const {
    std::uint64_t sum = generation + slot_generations[generation_slot(hash)];
    if (filler != kNoFiller && !filler_generations.empty()) {
      sum += filler_generations[filler * kFillerSlots + (hash >> 8) % kFillerSlots];
    }
    return encode_ticket(filler, sum);
  }
  void supersede(std::size_t hash) { ++slot_generations[generation_slot(hash)]; }
  void supersede(std::size_t hash, std::uint8_t filler) {
    if (filler_generations.empty()) filler_generations.assign(kMaxFillers * kFillerSlots, 0);
    ++filler_generations[filler * kFillerSlots + (hash >> 8) % kFillerSlots];
  }
  static constexpr std::uint8_t kNoFiller = Store::kNoFiller;
  static constexpr std::size_t kMaxFillers = Store::kMaxFillers;

  mutable std::mutex mutex;
  detail::ShardTable table;
  // Both only grow, so their sum changes whenever either does.
  std::uint64_t generation = 0;  // bumped by invalidate_prefix and clear
  std::array<std::uint64_t, kGenerationSlots> slot_generations{};  // bumped per key
  std::vector<std::uint64_t> filler_generations;  // per filler: invalidate_filled_here()
};

void Store::set_thread_filler(std::uint8_t filler) {
  assert(filler < kMaxFillers || filler == kNoFiller);
  this_thread_filler = filler;
}

std::uint8_t Store::thread_filler() { return this_thread_filler; }

Store::Store(const config::CacheSettings& settings)
    : shard_count_(static_cast<std::size_t>(std::max(1, settings.shards))),
      shard_budget_(settings.max_memory / shard_count_),
      counters_(std::make_unique<detail::StoreCounters>()) {
  shards_.reserve(shard_count_);
  for (std::size_t i = 0; i < shard_count_; ++i) {
    shards_.push_back(std::make_unique<Shard>(shard_budget_, *counters_));
  }
}

// Shards are destroyed before the counters they update (members die in reverse order).
Store::~Store() = default;

Store::Shard& Store::shard_for(std::size_t hash) const {
  // The high half picks the shard, the low bits pick the bucket inside it: independent bits.
  return *shards_[(hash >> 32) % shard_count_];
}

bool Store::lookup(CacheKey key, TimePoint now, Entry& out) {
  const std::size_t hash = detail::hash_user_key(key.user_key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  detail::Node* node = shard.table.find(hash, key);
  if (!node) return false;
  if (node->dead(now)) {
    shard.table.remove(hash, node);
    counters_->expirations.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  node->flags |= detail::Node::kVisited;
  if (node->hits != std::numeric_limits<std::uint32_t>::max()) ++node->hits;
  node->copy_to(out);
  return true;
}

std::optional<Entry> Store::lookup(CacheKey key, TimePoint now) {
  Entry entry;
  if (!lookup(key, now, entry)) return std::nullopt;
  return entry;
}

std::optional<Entry> Store::peek(CacheKey key, TimePoint now) const {
  const std::size_t hash = detail::hash_user_key(key.user_key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  const detail::Node* node = shard.table.find(hash, key);
  if (!node || node->dead(now)) return std::nullopt;
  Entry entry;
  node->copy_to(entry);
  return entry;
}

std::uint64_t Store::fill_ticket(std::string_view user_key) const {
  const std::size_t hash = detail::hash_user_key(user_key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  return shard.ticket(hash, thread_filler());
}

bool Store::ticket_valid(std::string_view user_key, std::uint64_t ticket) const {
  const std::size_t hash = detail::hash_user_key(user_key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  return shard.ticket(hash, ticket_filler(ticket)) == ticket;
}

StoreResult Store::store(CacheKey key, const Entry& entry) { return fill(key, entry, nullptr); }

StoreResult Store::store(CacheKey key, const Entry& entry, std::uint64_t ticket) {
  return fill(key, entry, &ticket);
}

StoreResult Store::fill(CacheKey key, const Entry& entry, const std::uint64_t* ticket) {
  const std::size_t hash = detail::hash_user_key(key.user_key);
  Shard& shard = shard_for(hash);
  // Allocate and copy the value before taking the lock, so a large value does not stall the
  // shard's readers; a node left unused is freed after the lock is released.
  detail::NodePtr node;
  if (detail::Node::representable(key, entry)) node.reset(detail::Node::create(key, entry));
  if (node) node->filler = ticket ? ticket_filler(*ticket) : kNoFiller;
  std::lock_guard lock(shard.mutex);
  if (ticket && shard.ticket(hash, ticket_filler(*ticket)) != *ticket) {
    return StoreResult::superseded;
  }
  if (node && shard.table.insert(hash, node, entry.stored_at)) return StoreResult::stored;
  // Too large: the old value is outdated by the one that cannot be cached, so it goes too.
  if (!node) shard.table.remove_key(hash, key);
  return StoreResult::too_large;
}

bool Store::set_delta(CacheKey key, Duration delta) {
  const std::size_t hash = detail::hash_user_key(key.user_key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  detail::Node* node = shard.table.find(hash, key);
  if (!node) return false;
  node->delta_us = detail::saturate_u32<std::chrono::microseconds>(delta);
  return true;
}

bool Store::erase(CacheKey key) {
  const std::size_t hash = detail::hash_user_key(key.user_key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  shard.supersede(hash);
  return shard.table.remove_key(hash, key);
}

std::size_t Store::invalidate(std::string_view user_key) {
  const std::size_t hash = detail::hash_user_key(user_key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  shard.supersede(hash);
  return shard.table.remove_user_key(hash, user_key);
}

std::size_t Store::invalidate_filled_here(std::string_view user_key) {
  const std::uint8_t filler = thread_filler();
  if (filler == kNoFiller) return invalidate(user_key);
  const std::size_t hash = detail::hash_user_key(user_key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  shard.supersede(hash, filler);
  return shard.table.remove_user_key_filled_by(hash, user_key, filler, kNoFiller);
}

std::size_t Store::invalidate_prefix(std::string_view prefix) {
  // Keys sharing a prefix hash to every shard, so each is scanned under its own lock in turn:
  // other shards keep serving meanwhile.
  std::size_t removed = 0;
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    ++shard->generation;
    removed += shard->table.remove_prefix(prefix);
  }
  return removed;
}

std::size_t Store::invalidate_matching(const std::function<bool(std::string_view)>& matches) {
  std::size_t removed = 0;
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    ++shard->generation;
    removed += shard->table.remove_matching(matches);
  }
  return removed;
}

std::size_t Store::clear() {
  std::size_t removed = 0;
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    ++shard->generation;
    removed += shard->table.remove_all();
  }
  return removed;
}

std::size_t Store::sweep(TimePoint now, std::size_t buckets_per_shard) {
  std::size_t removed = 0;
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    removed += shard->table.remove_dead(now, buckets_per_shard);
  }
  return removed;
}

std::uint64_t Store::entries() const { return counters_->entries.load(std::memory_order_relaxed); }
std::uint64_t Store::bytes() const { return counters_->bytes.load(std::memory_order_relaxed); }
std::uint64_t Store::evictions() const {
  return counters_->evictions.load(std::memory_order_relaxed);
}

StoreStats Store::stats() const {
  return {entries(), bytes(), evictions(), counters_->expirations.load(std::memory_order_relaxed)};
}

}  // namespace corral::cache
