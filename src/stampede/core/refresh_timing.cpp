// The early-refresh decision of a fresh hit; the reasoning is in refresh_timing.hpp.
#include "stampede/core/refresh_timing.hpp"

#include <algorithm>

#include "stampede/core/xfetch.hpp"

namespace corral::stampede {
namespace {

// splitmix64's finaliser: neighbouring store instants give unrelated fractions.
double unit_hash(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
}

}  // namespace

bool grace_covers_fetch(const cache::Entry& entry) {
  if (entry.delta <= cache::Duration::zero()) return false;
  const auto grace = entry.hard_expiry - entry.soft_expiry;
  return static_cast<double>(grace.count()) >=
         kGraceCoverDeltas * static_cast<double>(entry.delta.count());
}

bool read_often(cache::TimePoint now, const cache::Entry& entry) {
  if (entry.delta <= cache::Duration::zero()) return false;
  const double age =
      static_cast<double>(std::max(now - entry.stored_at, cache::Duration(1)).count());
  return static_cast<double>(entry.hits) * static_cast<double>(entry.delta.count()) >=
         kHotReadsPerDelta * age;
}

cache::Duration refresh_ahead_lead(const cache::Entry& entry, double beta) {
  const auto stored = static_cast<std::uint64_t>(entry.stored_at.time_since_epoch().count());
  const double lead =
      beta * static_cast<double>(entry.delta.count()) * (1.0 + kAheadJitter * unit_hash(stored));
  const auto cap = max_early_window(entry.ttl(), entry.delta, beta);
  return std::min(cache::Duration(static_cast<cache::Duration::rep>(lead)), cap);
}

EarlyRefresh early_refresh(cache::TimePoint now, const cache::Entry& entry, double beta,
                           cache::Random& random) {
  if (!(beta > 0)) return EarlyRefresh::none;  // also rejects NaN
  if (now >= entry.soft_expiry) return EarlyRefresh::xfetch;
  if (entry.delta <= cache::Duration::zero() || grace_covers_fetch(entry)) {
    return EarlyRefresh::none;
  }
  if (read_often(now, entry)) {
    return entry.soft_expiry - now <= refresh_ahead_lead(entry, beta) ? EarlyRefresh::ahead
                                                                      : EarlyRefresh::none;
  }
  return should_refresh_early(now, entry, beta, random) ? EarlyRefresh::xfetch : EarlyRefresh::none;
}

}  // namespace corral::stampede
