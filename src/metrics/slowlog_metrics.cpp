// The slowlog's collector: read at scrape time from the log's cumulative phase counts.
#include "metrics/slowlog_metrics.hpp"

#include <limits>

#include <prometheus/collectable.h>

#include "metrics/metric_families.hpp"
#include "slowlog/slow_log.hpp"

namespace corral::metrics {

namespace {
using prometheus::MetricType;

class SlowlogCollector final : public prometheus::Collectable {
 public:
  explicit SlowlogCollector(const slowlog::SlowLog& log) : log_(log) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const auto& h = log_.histograms();
    std::vector<prometheus::MetricFamily> out;
    auto phases = make_family("corral_slowlog_phase_seconds",
                              "Where the time of requests slower than slowlog.threshold went, by "
                              "phase (queued, cache_lookup, coalesced_wait, lock_wait, "
                              "origin_fetch, upstream).",
                              MetricType::Histogram);
    for (std::size_t phase = 0; phase < slowlog::kPhaseCount; ++phase) {
      prometheus::ClientMetric m;
      m.label = {{"phase", std::string(slowlog::kPhaseNames[phase])}};
      std::uint64_t cumulative = 0;
      for (std::size_t b = 0; b < h.buckets[phase].size(); ++b) {
        cumulative += h.buckets[phase][b].load(std::memory_order_relaxed);
        const double bound = b < slowlog::kPhaseBuckets.size()
                                 ? slowlog::kPhaseBuckets[b]
                                 : std::numeric_limits<double>::infinity();
        m.histogram.bucket.push_back({cumulative, bound});
      }
      m.histogram.sample_count = cumulative;
      m.histogram.sample_sum =
          static_cast<double>(h.sum_us[phase].load(std::memory_order_relaxed)) / 1e6;
      phases.metric.push_back(std::move(m));
    }
    out.push_back(std::move(phases));
    auto entries = make_family("corral_slowlog_entries_total",
                               "Requests recorded in the slowlog (slower than slowlog.threshold).",
                               MetricType::Counter);
    entries.metric.push_back(make_sample(
        {}, MetricType::Counter, static_cast<double>(h.recorded.load(std::memory_order_relaxed))));
    out.push_back(std::move(entries));
    return out;
  }

 private:
  const slowlog::SlowLog& log_;
};
}  // namespace

std::shared_ptr<prometheus::Collectable> make_slowlog_metrics(const slowlog::SlowLog& log) {
  return std::make_shared<SlowlogCollector>(log);
}

}  // namespace corral::metrics
