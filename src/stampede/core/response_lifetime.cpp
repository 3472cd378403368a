// response_lifetime: the response's directives win where they are stated, the policy elsewhere.
#include "stampede/core/response_lifetime.hpp"

#include <algorithm>

#include "stampede/core/entry_meta.hpp"

namespace corral::stampede {

ResponseLifetime response_lifetime(const cache::Lifetime& policy,
                                   const origin::ResponseCaching& caching, bool negative,
                                   std::uint64_t tag_generation, cache::Duration keep_expired) {
  ResponseLifetime out;
  out.lifetime = policy;
  // The origin said how long: no jitter on top, which could only stretch what it allowed.
  if (caching.fresh_for) out.lifetime.ttl = *caching.fresh_for;
  if (!negative) {
    if (caching.grace) out.lifetime.grace = std::max<cache::Duration>(policy.grace, *caching.grace);
    if (caching.stale_if_error)
      out.lifetime.stale_if_error =
          std::max<cache::Duration>(policy.stale_if_error, *caching.stale_if_error);
  }
  if (caching.revalidate_always) out.lifetime.grace = cache::Duration::zero();
  if (caching.validators.empty() && caching.tags.empty()) return out;

  EntryMeta meta;
  meta.tag_generation = tag_generation;
  meta.stale_if_error =
      std::chrono::duration_cast<std::chrono::milliseconds>(out.lifetime.stale_if_error);
  meta.validators = caching.validators;
  meta.tags = caching.tags;
  out.meta = meta.encode();
  // A "not found" is never revalidated (nor served on error): nothing to keep it for.
  if (!caching.validators.empty() && !negative)
    out.lifetime.stale_if_error = std::max(out.lifetime.stale_if_error, keep_expired);
  return out;
}

}  // namespace corral::stampede
