// The windows and meta of an entry whose origin spoke HTTP caching: the response's freshness,
// stale-while-revalidate and stale-if-error over the policy's, and how long an expired copy
// with validators is kept so it can be revalidated instead of downloaded again. Pure.
#pragma once

#include <cstdint>
#include <string>

#include "cache/entry.hpp"
#include "origin/origin.hpp"

namespace corral::stampede {

struct ResponseLifetime {
  cache::Lifetime lifetime;  // what the store keeps (stale_if_error may include keep_expired)
  std::string meta;          // EntryMeta bytes; empty when there are no validators and no tags
};

// `policy` is entry_lifetime()'s answer for this reply. `tag_generation` is TagEpochs's
// generation when the fetch began. `keep_expired` (the http origin's max_ttl) is how long past
// its expiry a copy with validators stays, served only after a 304 (or, within the real
// stale_if_error, when the origin fails). Negative entries take the response's freshness only.
ResponseLifetime response_lifetime(const cache::Lifetime& policy,
                                   const origin::ResponseCaching& caching, bool negative,
                                   std::uint64_t tag_generation, cache::Duration keep_expired);

}  // namespace corral::stampede
