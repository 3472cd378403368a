// Internal to the store: one shard's entries, an intrusive chained hash table plus a SIEVE
// eviction queue, both threaded through the entry nodes. Not thread-safe; Store locks around it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "cache/cache_key.hpp"
#include "cache/entry.hpp"
#include "cache/node.hpp"

namespace corral::cache::detail {

// Store-wide totals, shared by all shards; relaxed atomics so metrics can read them lock-free.
struct StoreCounters {
  std::atomic<std::uint64_t> entries{0};
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> evictions{0};    // removed to make room
  std::atomic<std::uint64_t> expirations{0};  // removed because dead
};

// The hash of a user key; all variants of a key share it, hence a shard and a bucket.
inline std::size_t hash_user_key(std::string_view user_key) {
  return std::hash<std::string_view>{}(user_key);
}

class ShardTable {
 public:
  ShardTable(std::uint64_t budget, StoreCounters& counters);
  ~ShardTable();
  ShardTable(const ShardTable&) = delete;
  ShardTable& operator=(const ShardTable&) = delete;

  // Passes over chained nodes whose fingerprint differs without reading their key, and starts
  // fetching a candidate's key and value lines before comparing (see chain_link.hpp).
  Node* find(std::size_t hash, CacheKey key) const;
  // Links `node` in, replacing any entry with its key; evicts by SIEVE (a dead entry under the
  // hand goes even if visited) until the shard fits its budget. When the node alone exceeds the
  // budget, returns false, leaves `node` with the caller and no entry for its key.
  bool insert(std::size_t hash, NodePtr& node, TimePoint now);
  void remove(std::size_t hash, Node* node);
  bool remove_key(std::size_t hash, CacheKey key);
  std::size_t remove_user_key(std::size_t hash, std::string_view user_key);
  // The key's nodes filled by `filler` or by no io thread in particular (`no_filler`).
  std::size_t remove_user_key_filled_by(std::size_t hash, std::string_view user_key,
                                        std::uint8_t filler, std::uint8_t no_filler);
  std::size_t remove_prefix(std::string_view prefix);
  // Every node whose user key `matches` accepts (called once per entry, under the shard's lock).
  std::size_t remove_matching(const std::function<bool(std::string_view)>& matches);
  std::size_t remove_all();
  // Frees dead entries among the next `bucket_count` buckets; a rotating cursor makes repeated
  // calls cover the whole table.
  std::size_t remove_dead(TimePoint now, std::size_t bucket_count);

  static std::uint64_t charge(const Node& node) { return node.payload_size() + kEntryOverhead; }
  std::size_t entries() const { return entries_; }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t budget() const { return budget_; }

 private:
  ChainLink& bucket(std::size_t hash) { return buckets_[hash & (buckets_.size() - 1)]; }
  void unlink_chain(std::size_t hash, Node* node);
  void unlink_queue(Node* node);
  void push_head(Node* node);
  void evict_one(TimePoint now);
  void grow();

  std::vector<ChainLink> buckets_;  // size is a power of two
  Node* head_ = nullptr;            // newest
  Node* tail_ = nullptr;            // oldest
  Node* hand_ = nullptr;            // next eviction candidate; null means start at the tail
  std::size_t sweep_cursor_ = 0;
  std::size_t entries_ = 0;
  std::uint64_t bytes_ = 0;
  const std::uint64_t budget_;
  StoreCounters& counters_;
};

}  // namespace corral::cache::detail
