// When a fresh hit starts a background refresh: at a moment that depends on the recompute time
// and the grace window, not on how many requests happen to ask (XFetch per request does).
#pragma once

#include <cstdint>

#include "cache/clock.hpp"
#include "cache/entry.hpp"
#include "cache/random.hpp"

namespace corral::stampede {

// Why per-request XFetch is not enough here. Its test `delta * beta * -ln(u) >= remaining`,
// drawn by N requests, fires almost surely once remaining < delta * beta * ln(N * ...): under load
// it fires at the very start of its window (the cap, ttl / 2 with a 2 s TTL and a 200 ms fetch),
// so the origin sees a fetch every ~0.6 TTL. XFetch randomises because its clients cannot
// coordinate; Corral coalesces in-process and locks fleet-wide, so it can pick the moment:
//
//  1. grace covers the fetch (grace >= kGraceCoverDeltas * delta): no early refresh at all. The
//     first read after expiry is served the stale copy at once and refreshes in the background;
//     the copy is stale for one fetch time, and a refresh cycle is ttl + delta, below one fetch
//     per TTL window. Refreshing early can only do worse: any earlier start shortens the cycle.
//  2. no usable grace, key read often (at least once per delta on average since it was stored):
//     refresh ahead, once, at soft_expiry - lead with lead = beta * delta * (1 + jitter * h),
//     h in [0, 1) a hash of the entry's store instant. Every request of a generation agrees on the
//     instant (the first read after it starts the refresh; the flight table coalesces the rest),
//     so a thousand requests a second refresh no earlier than five would. The lead is at least
//     beta * delta, XFetch's expected lead for one draw, so with beta >= 1 the fetch usually
//     lands before expiry; h differs between processes (each stores at its own instant), so a
//     fleet does not all ask for the lock at once. Without grace a refresh must start about one
//     fetch before expiry, so a cycle is at most ttl - delta: at least ttl / (ttl - delta)
//     fetches per TTL window, which is why grace is the way to one fetch per window.
//  3. rarely read, no usable grace: XFetch per request, unchanged. With few reads each one must
//     take its chance, and the paper's distribution is what it is good at.
// beta <= 0 turns early refresh off in every case.
//
// "Read often" uses the entry's hit count over its age. A replacement keeps the hit count
// (cache/store.hpp), so a key once hot is taken for hot a while longer: it then refreshes ahead
// (case 2) instead of by XFetch, which costs at most one refresh per generation either way.
inline constexpr double kGraceCoverDeltas = 4.0;
inline constexpr double kHotReadsPerDelta = 1.0;
inline constexpr double kAheadJitter = 0.5;

enum class EarlyRefresh : std::uint8_t {
  none,    // serve and do nothing
  ahead,   // case 2: the entry's refresh-ahead instant has come
  xfetch,  // case 3: the per-request XFetch draw fired (or the entry is past soft expiry)
};

// True when the entry's grace window is long enough to serve the stale copy while one fetch
// runs (case 1). False while delta is unknown (0).
bool grace_covers_fetch(const cache::Entry& entry);

// True when the entry was read at least kHotReadsPerDelta times per delta since it was stored.
bool read_often(cache::TimePoint now, const cache::Entry& entry);

// How long before soft expiry a hot entry refreshes (case 2): beta * delta * (1 + kAheadJitter *
// h), h from the entry's store instant, capped like XFetch (max_early_window).
cache::Duration refresh_ahead_lead(const cache::Entry& entry, double beta);

// The decision for one fresh hit at `now` (cases above). `random` is drawn only by case 3.
EarlyRefresh early_refresh(cache::TimePoint now, const cache::Entry& entry, double beta,
                           cache::Random& random);

}  // namespace corral::stampede
