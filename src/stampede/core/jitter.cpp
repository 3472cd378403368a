// TTL jitter and entry lifetimes; see jitter.hpp.
#include "stampede/core/jitter.hpp"

#include <algorithm>

namespace corral::stampede {

cache::Duration jittered(cache::Duration ttl, double jitter, cache::Random& random) {
  if (!(jitter > 0) || ttl <= cache::Duration::zero()) return ttl;
  jitter = std::min(jitter, 0.99);
  const double factor = 1.0 - jitter + 2.0 * jitter * random.uniform();
  return cache::Duration(
      static_cast<cache::Duration::rep>(static_cast<double>(ttl.count()) * factor));
}

cache::Lifetime entry_lifetime(const config::PolicySettings& policy, bool negative,
                               cache::Random& random) {
  if (negative) return {jittered(policy.negative_ttl, policy.jitter, random), {}, {}};
  return {jittered(policy.ttl, policy.jitter, random), policy.grace, policy.stale_if_error};
}

}  // namespace corral::stampede
