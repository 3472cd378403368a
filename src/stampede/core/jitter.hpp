// TTL jitter, so keys loaded together do not expire together, and the lifetime of a new entry
// derived from its policy.
#pragma once

#include "cache/clock.hpp"
#include "cache/entry.hpp"
#include "cache/random.hpp"
#include "config/settings.hpp"

namespace corral::stampede {

// ttl * f with f uniform in [1 - jitter, 1 + jitter]; jitter is clamped to [0, 1) so the result
// stays positive. jitter == 0 returns ttl exactly and draws nothing.
cache::Duration jittered(cache::Duration ttl, double jitter, cache::Random& random);

// The windows of an entry about to be stored under `policy`: the jittered ttl, grace and
// stale_if_error. A negative entry (a cached "not found") lives for the jittered negative_ttl
// only: no grace and no stale-if-error, since serving an old "not found" after the key may have
// appeared is worse than asking the origin again.
cache::Lifetime entry_lifetime(const config::PolicySettings& policy, bool negative,
                               cache::Random& random);

}  // namespace corral::stampede
