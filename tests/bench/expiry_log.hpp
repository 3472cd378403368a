// The hot key's expiry instants and refreshes, learned by polling during a stampede_load run
// (PEXPIRETIME on Redis, CORRAL.INFO and CORRAL.STATS through Corral).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace corral::bench {

// The nominal expiry instants of the hot key's value, in seconds since the start of the run.
class ExpiryLog {
 public:
  // Cache-aside in Redis: the key's absolute expiry. Many clients SET the key after a stampede,
  // each moving the expiry, so an expiry counts only once it has lapsed.
  void redis_expiry(double expiry_s, double now_s) {
    if (current_ && *current_ <= now_s && std::abs(expiry_s - *current_) > 1e-3) {
      lapsed_.push_back(*current_);
    }
    current_ = expiry_s;
  }
  void redis_missing() {
    if (current_) lapsed_.push_back(*current_);
    current_.reset();
  }

  // Through Corral: one generation of the value per TTL cycle. Stores less than `fetch_s` after
  // the first store of a generation belong to it: duplicate fetches of one expiry finish within
  // about one fetch time of each other, and must show up as extra fetches per expiry, not as
  // extra expiries. So does a store with the same expiry (in a fleet, a process may store again
  // the shared copy it already holds: the fleet's clock sets the expiry). A generation refreshed
  // early (XFetch) still contributes its nominal expiry: the moment a plain TTL cache would have
  // expired. `origin_requests` is the policy's fetch counter at this observation (-1: unknown); the
  // fetches counted between the first sightings of two generations are those of one refresh,
  // wherever the refresh fell relative to the run's end (XFetch fetches before the expiry it
  // serves, so counting fetches and expiries over the same span would be off by one at the edges).
  // `seen_s` is now: the first sightings are kept so that fetches counted elsewhere (at an origin
  // server) can be paired the same way.
  void corral_fresh(double stored_s, double expiry_s, double fetch_s, std::int64_t origin_requests,
                    double seen_s) {
    constexpr double kSameExpiry = 0.01;
    if (generation_start_ && (stored_s - *generation_start_ < fetch_s ||
                              (current_ && std::abs(expiry_s - *current_) < kSameExpiry))) {
      current_ = expiry_s;
      return;
    }
    if (current_) lapsed_.push_back(*current_);
    if (generation_start_) {
      if (origin_requests < 0 || counter_at_generation_ < 0) counted_ = false;
      ++refreshes_;
      refresh_fetches_ += origin_requests - counter_at_generation_;
    }
    generation_start_ = stored_s;
    current_ = expiry_s;
    counter_at_generation_ = origin_requests;
    first_seen_.push_back(seen_s);
  }

  // When each generation was first seen, in order (the first one: the value warmed up before).
  const std::vector<double>& generations_seen() const { return first_seen_; }

  // Generations replaced during the run and the origin fetches that replaced them, if counted.
  std::optional<std::pair<std::int64_t, std::int64_t>> refreshes() const {
    if (!counted_ || !generation_start_) return std::nullopt;
    return std::pair{refreshes_, refresh_fetches_};
  }

  std::vector<double> finish() {
    if (current_) lapsed_.push_back(*current_);
    current_.reset();
    std::sort(lapsed_.begin(), lapsed_.end());
    return lapsed_;
  }

 private:
  std::optional<double> current_;
  std::optional<double> generation_start_;
  std::vector<double> lapsed_;
  std::vector<double> first_seen_;
  std::int64_t counter_at_generation_ = -1;
  std::int64_t refreshes_ = 0;
  std::int64_t refresh_fetches_ = 0;
  bool counted_ = true;
};

}  // namespace corral::bench
