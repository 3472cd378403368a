// Internal to the store: the memory layout of one stored entry, a 64-byte header followed in the
// same allocation by the user key, the variant, the value and, only when the entry has any, its
// meta bytes after their 32-bit length (one malloc per entry, no std::string objects), so the
// overhead per entry stays under 100 bytes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string_view>

#include "cache/cache_key.hpp"
#include "cache/chain_link.hpp"
#include "cache/entry.hpp"

namespace corral::cache::detail {

// Windows are kept as 32-bit millisecond offsets from soft_expiry (up to ~49.7 days; longer ones
// saturate, which only makes an entry expire earlier) and delta as 32-bit microseconds (~71 min).
template <class Unit>
std::uint32_t saturate_u32(Duration d) {
  if (d <= Duration::zero()) return 0;
  const auto count = std::chrono::duration_cast<Unit>(d).count();
  constexpr auto kMax = std::numeric_limits<std::uint32_t>::max();
  return count >= static_cast<decltype(count)>(kMax) ? kMax : static_cast<std::uint32_t>(count);
}

struct Node {
  static constexpr std::uint8_t kVisited = 1;   // SIEVE: hit since the hand last passed
  static constexpr std::uint8_t kNegative = 2;  // a cached "not found"
  static constexpr std::uint8_t kMeta = 4;      // meta bytes follow the value
  static constexpr std::size_t kMaxVariant = std::numeric_limits<std::uint16_t>::max();

  ChainLink chain_next;  // next node in the same hash bucket (all variants of a key share one)
  Node* newer;           // SIEVE queue: toward the head (inserted later)
  Node* older;           // toward the tail (inserted earlier)
  std::int64_t soft_expiry_ticks;   // steady clock ticks
  std::uint32_t ttl_ms;             // soft_expiry - stored_at
  std::uint32_t grace_ms;           // hard_expiry - soft_expiry
  std::uint32_t stale_if_error_ms;  // stale_if_error_until - soft_expiry
  std::uint32_t delta_us;
  std::uint32_t hits;
  std::uint32_t key_size;
  std::uint32_t value_size;
  std::uint16_t variant_size;
  std::uint8_t flags;
  // The io thread whose fill stored it (Store::set_thread_filler), or Store's kNoFiller; fits the
  // header's last padding byte.
  std::uint8_t filler;

  // Whether the sizes fit the header's fields.
  static bool representable(CacheKey key, const Entry& entry) {
    constexpr std::size_t kMax32 = std::numeric_limits<std::uint32_t>::max();
    return key.variant.size() <= kMaxVariant && key.user_key.size() <= kMax32 &&
           entry.value.size() <= kMax32 && entry.meta.size() <= kMax32;
  }
  // Requires representable(key, entry).
  static Node* create(CacheKey key, const Entry& entry) {
    const std::size_t meta_bytes =
        entry.meta.empty() ? 0 : sizeof(std::uint32_t) + entry.meta.size();
    const std::size_t payload =
        key.user_key.size() + key.variant.size() + entry.value.size() + meta_bytes;
    void* memory = ::operator new(sizeof(Node) + payload);
    if (!ChainLink::fits(memory)) {
      // Never seen on Linux; a link could not carry its fingerprint, so the entry is not made.
      ::operator delete(memory);
      throw std::bad_alloc();
    }
    Node* node = new (memory) Node{};
    node->key_size = static_cast<std::uint32_t>(key.user_key.size());
    node->variant_size = static_cast<std::uint16_t>(key.variant.size());
    node->value_size = static_cast<std::uint32_t>(entry.value.size());
    char* bytes = node->bytes();
    // memcpy with a null source is undefined even for zero bytes, hence the size guards.
    if (!key.user_key.empty()) std::memcpy(bytes, key.user_key.data(), key.user_key.size());
    bytes += key.user_key.size();
    if (!key.variant.empty()) std::memcpy(bytes, key.variant.data(), key.variant.size());
    bytes += key.variant.size();
    if (!entry.value.empty()) std::memcpy(bytes, entry.value.data(), entry.value.size());
    bytes += entry.value.size();
    node->set_metadata(entry);
    if (!entry.meta.empty()) {
      const auto meta_size = static_cast<std::uint32_t>(entry.meta.size());
      std::memcpy(bytes, &meta_size, sizeof(meta_size));
      std::memcpy(bytes + sizeof(meta_size), entry.meta.data(), entry.meta.size());
      node->flags |= kMeta;
    }
    return node;
  }
  static void destroy(Node* node) {
    node->~Node();
    ::operator delete(node);
  }

  void set_metadata(const Entry& entry) {
    soft_expiry_ticks = entry.soft_expiry.time_since_epoch().count();
    ttl_ms = saturate_u32<std::chrono::milliseconds>(entry.soft_expiry - entry.stored_at);
    grace_ms = saturate_u32<std::chrono::milliseconds>(entry.hard_expiry - entry.soft_expiry);
    stale_if_error_ms =
        saturate_u32<std::chrono::milliseconds>(entry.stale_if_error_until - entry.soft_expiry);
    delta_us = saturate_u32<std::chrono::microseconds>(entry.delta);
    // kMeta describes the allocation, not the entry's windows: it stays as create() set it.
    flags =
        static_cast<std::uint8_t>((flags & (kVisited | kMeta)) | (entry.negative ? kNegative : 0));
  }
  // Copies everything out; reuses out.value's capacity.
  void copy_to(Entry& out) const {
    out.value.assign(value());
    out.soft_expiry = soft_expiry();
    out.stored_at = out.soft_expiry - std::chrono::milliseconds(ttl_ms);
    out.hard_expiry = hard_expiry();
    out.stale_if_error_until = out.soft_expiry + std::chrono::milliseconds(stale_if_error_ms);
    out.delta = std::chrono::microseconds(delta_us);
    out.hits = hits;
    out.negative = (flags & kNegative) != 0;
    out.meta.assign(meta());
  }

  char* bytes() { return reinterpret_cast<char*>(this + 1); }
  const char* bytes() const { return reinterpret_cast<const char*>(this + 1); }
  std::string_view user_key() const { return {bytes(), key_size}; }
  std::string_view variant() const { return {bytes() + key_size, variant_size}; }
  std::string_view value() const { return {bytes() + key_size + variant_size, value_size}; }
  std::string_view meta() const {
    if ((flags & kMeta) == 0) return {};
    const char* at = bytes() + key_size + variant_size + value_size;
    std::uint32_t size = 0;
    std::memcpy(&size, at, sizeof(size));
    return {at + sizeof(size), size};
  }
  std::size_t payload_size() const {
    const std::size_t meta_bytes = (flags & kMeta) ? sizeof(std::uint32_t) + meta().size() : 0;
    return std::size_t{key_size} + variant_size + std::size_t{value_size} + meta_bytes;
  }
  CacheKey key() const { return {user_key(), variant()}; }
  bool matches(CacheKey key) const {
    return user_key() == key.user_key && variant() == key.variant;
  }

  TimePoint soft_expiry() const { return TimePoint(Duration(soft_expiry_ticks)); }
  TimePoint hard_expiry() const { return soft_expiry() + std::chrono::milliseconds(grace_ms); }
  TimePoint usable_until() const {
    return soft_expiry() + std::chrono::milliseconds(std::max(grace_ms, stale_if_error_ms));
  }
  bool dead(TimePoint now) const { return now >= usable_until(); }
};

struct NodeDeleter {
  void operator()(Node* node) const { Node::destroy(node); }
};
// Owns a node until a shard table links it in.
using NodePtr = std::unique_ptr<Node, NodeDeleter>;

static_assert(sizeof(Node) == 64, "the per-entry header is budgeted at 64 bytes");
static_assert(kEntryOverhead == sizeof(Node) + 16 + 16, "see kEntryOverhead in entry.hpp");

}  // namespace corral::cache::detail
