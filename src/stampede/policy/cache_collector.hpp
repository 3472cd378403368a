// The Prometheus collector of the caching layer: per-policy series (lookups, refreshes, origin
// requests, waiters, breaker state, invalidations) and the store's entries, bytes and evictions.
#pragma once

#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace corral::stampede {

class CacheRuntime;

// Reads the runtime on every Collect(): it must not outlive it.
class CacheCollector final : public prometheus::Collectable {
 public:
  explicit CacheCollector(const CacheRuntime& runtime) : runtime_(runtime) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const CacheRuntime& runtime_;
};

}  // namespace corral::stampede
