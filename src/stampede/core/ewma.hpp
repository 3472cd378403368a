// Smoothing of measured recompute times (XFetch's delta), so one slow or fast fetch does not
// swing the early-refresh window.
#pragma once

#include <chrono>

#include "cache/clock.hpp"

namespace corral::stampede {

// Weight of the newest sample. 0.3 follows a change within a handful of refreshes while a single
// outlier moves delta by less than a third of its excess.
inline constexpr double kDeltaSmoothing = 0.3;

// Exponentially weighted moving average. A zero `previous` means "no measurement yet", and the
// sample is taken as is. Negative samples are clamped to zero.
inline cache::Duration ewma(cache::Duration previous, cache::Duration sample,
                            double alpha = kDeltaSmoothing) {
  if (sample < cache::Duration::zero()) sample = cache::Duration::zero();
  if (previous <= cache::Duration::zero()) return sample;
  const double mixed = alpha * static_cast<double>(sample.count()) +
                       (1.0 - alpha) * static_cast<double>(previous.count());
  return cache::Duration(static_cast<cache::Duration::rep>(mixed + 0.5));
}

}  // namespace corral::stampede
