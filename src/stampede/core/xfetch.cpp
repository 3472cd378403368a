// XFetch maths; see xfetch.hpp for the formula and the cap.
#include "stampede/core/xfetch.hpp"

#include <algorithm>
#include <cmath>

namespace corral::stampede {
namespace {

double seconds(cache::Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

cache::Duration max_early_window(cache::Duration ttl, cache::Duration delta, double beta) {
  if (!(beta > 0) || delta <= cache::Duration::zero()) return cache::Duration::zero();
  const double by_delta = kMaxEarlyDeltas * beta * static_cast<double>(delta.count());
  const double by_ttl = kMaxEarlyTtlFraction * static_cast<double>(std::max(ttl.count(), {}));
  return cache::Duration(static_cast<cache::Duration::rep>(std::min(by_delta, by_ttl)));
}

bool should_refresh_early(cache::TimePoint now, cache::TimePoint soft_expiry, cache::Duration ttl,
                          cache::Duration delta, double beta, cache::Random& random) {
  if (!(beta > 0)) return false;  // also rejects NaN
  const cache::Duration remaining = soft_expiry - now;
  if (remaining <= cache::Duration::zero()) return true;
  if (remaining > max_early_window(ttl, delta, beta)) return false;
  // -ln(u) is Exp(1)-distributed, so this holds with probability exp(-remaining / (delta*beta)).
  return seconds(delta) * beta * -std::log(random.uniform()) >= seconds(remaining);
}

bool should_refresh_early(cache::TimePoint now, const cache::Entry& entry, double beta,
                          cache::Random& random) {
  return should_refresh_early(now, entry.soft_expiry, entry.ttl(), entry.delta, beta, random);
}

double early_refresh_probability(cache::Duration remaining, cache::Duration ttl,
                                 cache::Duration delta, double beta) {
  if (!(beta > 0)) return 0.0;
  if (remaining <= cache::Duration::zero()) return 1.0;
  if (remaining > max_early_window(ttl, delta, beta)) return 0.0;
  return std::exp(-seconds(remaining) / (seconds(delta) * beta));
}

}  // namespace corral::stampede
