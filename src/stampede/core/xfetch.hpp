// Probabilistic early expiration (XFetch, Vattani, Chierichetti and Lowenstein, VLDB 2015): a
// hit refreshes early with a probability that grows as expiry nears and with the recompute time.
#pragma once

#include "cache/clock.hpp"
#include "cache/entry.hpp"
#include "cache/random.hpp"

namespace corral::stampede {

// The early window is capped so a rare draw (-ln u is unbounded) cannot refresh absurdly early:
// XFetch never fires more than min(kMaxEarlyDeltas * delta * beta, kMaxEarlyTtlFraction * ttl)
// before soft expiry. The first bound drops draws with probability e^-10 (~5e-5), leaving the
// distribution inside it untouched; the second bounds origin load when delta * beta is as long as
// the TTL itself: at most one refresh per (1 - kMaxEarlyTtlFraction) * ttl, i.e. 2 per TTL.
inline constexpr double kMaxEarlyDeltas = 10.0;
inline constexpr double kMaxEarlyTtlFraction = 0.5;

// How long before soft expiry XFetch may fire at all.
cache::Duration max_early_window(cache::Duration ttl, cache::Duration delta, double beta);

// The XFetch test `now - delta * beta * ln(u) >= soft_expiry`, u from `random`, within the cap.
// beta <= 0 turns it off (always false). Past soft expiry it is true (the stale path refreshes
// then; this keeps the formula's answer). Far from expiry it returns false without drawing, so
// most hits cost no random number.
bool should_refresh_early(cache::TimePoint now, cache::TimePoint soft_expiry, cache::Duration ttl,
                          cache::Duration delta, double beta, cache::Random& random);
bool should_refresh_early(cache::TimePoint now, const cache::Entry& entry, double beta,
                          cache::Random& random);

// The analytic probability of should_refresh_early with `remaining` time to soft expiry:
// exp(-remaining / (delta * beta)) inside the cap, 0 beyond it, 1 at or past expiry.
double early_refresh_probability(cache::Duration remaining, cache::Duration ttl,
                                 cache::Duration delta, double beta);

}  // namespace corral::stampede
