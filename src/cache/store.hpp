// The process-wide cache of RESP replies: sharded by user key, a mutex per shard held only for
// the synchronous operation itself, a memory budget enforced by SIEVE eviction per shard.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "cache/cache_key.hpp"
#include "cache/entry.hpp"
#include "config/settings.hpp"

namespace corral::cache {

namespace detail {
struct StoreCounters;
class ShardTable;
}  // namespace detail

enum class StoreResult : std::uint8_t {
  stored,
  too_large,   // the entry alone exceeds a shard's budget; any older entry for the key is gone
  superseded,  // the key was invalidated after the fill ticket was taken; nothing was written
};

struct StoreStats {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;        // key + variant + value + kEntryOverhead, summed
  std::uint64_t evictions = 0;    // removed to make room
  std::uint64_t expirations = 0;  // removed because dead (lazily, by sweep or by eviction)
};

// Contract: every method is synchronous, thread-safe and bounded by one shard's lock (prefix
// invalidation and clear() take each shard's lock in turn), so it may be called from any io
// thread but never while the caller holds a lock of its own across an await. Entries are copied
// out: nothing returned refers to memory inside the store.
class Store {
 public:
  // Budget per shard = max_memory / shards; an entry larger than that is never cached.
  explicit Store(const config::CacheSettings& settings);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // A hit copies the entry into `out` (reusing out.value's capacity), sets its SIEVE visited bit,
  // counts the hit and returns true. Every state but dead is a hit; the caller reads
  // out.state(now). A dead entry is freed and, like an absent one, returns false.
  bool lookup(CacheKey key, TimePoint now, Entry& out);
  std::optional<Entry> lookup(CacheKey key, TimePoint now);
  // Like lookup, but neither counts a hit nor sets the visited bit (CORRAL.INFO, tests).
  std::optional<Entry> peek(CacheKey key, TimePoint now) const;

  // Take a ticket before fetching a key's value and pass it to store(): if the key is
  // invalidated meanwhile (a write, invalidate_prefix, clear), the store refuses the stale fill.
  // The ticket names the calling thread's filler (see set_thread_filler): the entry records it.
  std::uint64_t fill_ticket(std::string_view user_key) const;
  // Whether a fill with `ticket` would still be accepted now.
  bool ticket_valid(std::string_view user_key, std::uint64_t ticket) const;

  // Io threads that each read the upstream's invalidations themselves (one tracking connection
  // per thread and node) name themselves here, once, on their thread: their fills record it, and
  // invalidate_filled_here() on that thread drops only those (and unattributed ones). A thread's
  // own invalidation stream is ordered with its own fetches (Redis sends a write's invalidation
  // before the write's reply), which another thread's copy of the same message is not.
  static constexpr std::uint8_t kNoFiller = 0xff;
  static constexpr std::uint8_t kMaxFillers = 64;
  static void set_thread_filler(std::uint8_t filler);
  // Inserts or replaces the entry, evicting by SIEVE to stay within the shard's budget;
  // entry.stored_at is taken as "now" (to recognise dead entries while evicting). entry.hits is
  // ignored: a replacement keeps the old count.
  StoreResult store(CacheKey key, const Entry& entry);
  StoreResult store(CacheKey key, const Entry& entry, std::uint64_t ticket);
  // Sets the smoothed recompute time of an entry in place; false when absent.
  bool set_delta(CacheKey key, Duration delta);

  // Removals return how many entries went. All of them also supersede outstanding fill tickets
  // for the keys they cover, even when nothing was cached yet.
  bool erase(CacheKey key);
  std::size_t invalidate(std::string_view user_key);  // every variant of the key
  // invalidate() as seen by the calling thread's filler: its fills in flight are superseded, its
  // entries and those of no filler dropped; other threads' go with their own copy of the news.
  // Without a filler on this thread: invalidate().
  std::size_t invalidate_filled_here(std::string_view user_key);
  std::size_t invalidate_prefix(std::string_view prefix);  // every key starting with it
  // Every key `matches` accepts: a scan of the whole store (for rare events such as a cluster's
  // slots changing owner), `matches` called under each shard's lock in turn.
  std::size_t invalidate_matching(const std::function<bool(std::string_view)>& matches);
  std::size_t clear();
  // Frees dead entries in up to `buckets_per_shard` buckets of each shard (a periodic sweeper
  // keeps memory from holding entries nobody asks for again).
  std::size_t sweep(TimePoint now, std::size_t buckets_per_shard);

  // Bytes an entry with these sizes is charged against the budget.
  static std::uint64_t charge(CacheKey key, std::size_t value_size) {
    return key.user_key.size() + key.variant.size() + value_size + kEntryOverhead;
  }
  std::size_t shard_count() const { return shard_count_; }
  std::uint64_t shard_budget() const { return shard_budget_; }
  std::uint64_t max_memory() const { return shard_budget_ * shard_count_; }
  // Lock-free reads of relaxed counters: exact when the store is quiet, approximate otherwise.
  std::uint64_t entries() const;
  std::uint64_t bytes() const;
  std::uint64_t evictions() const;
  StoreStats stats() const;

 private:
  struct Shard;
  Shard& shard_for(std::size_t hash) const;
  static std::uint8_t thread_filler();
  StoreResult fill(CacheKey key, const Entry& entry, const std::uint64_t* ticket);

  std::size_t shard_count_;
  std::uint64_t shard_budget_;
  std::unique_ptr<detail::StoreCounters> counters_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace corral::cache
