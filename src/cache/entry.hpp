// One cached reply and its lifetime: fresh until the (jittered) TTL, then stale for `grace`,
// then usable only when the origin fails until `stale_if_error`, then dead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/clock.hpp"

namespace corral::cache {

enum class EntryState : std::uint8_t {
  fresh,       // before soft_expiry: serve it (XFetch may refresh early)
  stale,       // in grace: serve it at once and refresh in the background
  error_only,  // past grace, within stale_if_error: fetch; serve it only if the fetch fails
  dead,        // past every window: a miss
};

constexpr std::string_view to_string(EntryState state) {
  constexpr std::string_view kNames[] = {"fresh", "stale", "error_only", "dead"};
  return kNames[static_cast<int>(state)];
}

// Bytes the store charges per entry beyond its key, variant and value bytes:
//   64  the node header (detail::Node: hash chain, SIEVE links, deadlines, delta, hits, sizes)
// + 16  allocator: glibc's chunk header (8) plus rounding to 16 bytes (8 on average)
// + 16  the hash bucket slot: 8 bytes at a load factor between 0.5 and 1, counted at 0.5
// The key, variant and value share the node's single allocation, so there is nothing else.
inline constexpr std::uint64_t kEntryOverhead = 96;

// The windows of one entry, measured from the moment it is stored. `ttl` already has jitter
// applied (see stampede/jitter.hpp, which derives these from a policy).
struct Lifetime {
  Duration ttl{};
  Duration grace{};
  Duration stale_if_error{};
};

struct Entry {
  std::string value;  // the raw RESP reply, sent to clients as is
  TimePoint stored_at{};
  TimePoint soft_expiry{};           // stored_at + ttl
  TimePoint hard_expiry{};           // soft_expiry + grace
  TimePoint stale_if_error_until{};  // soft_expiry + stale_if_error (may be before hard_expiry)
  Duration delta{};                  // smoothed recompute time, for XFetch
  std::uint32_t hits = 0;            // lookups that found it (saturates)
  bool negative = false;             // a cached "not found" reply
  // Opaque to the store (the read-through engine's HTTP validators and tag epochs); empty for
  // most entries, and then it costs nothing but this string's inline bytes.
  std::string meta;

  static Entry make(std::string value, TimePoint now, const Lifetime& lifetime, Duration delta,
                    bool negative) {
    Entry entry;
    entry.value = std::move(value);
    entry.stored_at = now;
    entry.soft_expiry = now + lifetime.ttl;
    entry.hard_expiry = entry.soft_expiry + lifetime.grace;
    entry.stale_if_error_until = entry.soft_expiry + lifetime.stale_if_error;
    entry.delta = delta;
    entry.negative = negative;
    return entry;
  }

  Duration ttl() const { return soft_expiry - stored_at; }
  // The last instant at which the entry is of any use (normal or error path).
  TimePoint usable_until() const { return std::max(hard_expiry, stale_if_error_until); }

  EntryState state(TimePoint now) const {
    if (now < soft_expiry) return EntryState::fresh;
    if (now < hard_expiry) return EntryState::stale;
    if (now < stale_if_error_until) return EntryState::error_only;
    return EntryState::dead;
  }
};

}  // namespace corral::cache
