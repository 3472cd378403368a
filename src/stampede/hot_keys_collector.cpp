// The hot-key collector, read at scrape time from the last window's report.
#include "stampede/hot_keys_collector.hpp"

#include <string>

#include <prometheus/collectable.h>

#include "metrics/metric_families.hpp"
#include "stampede/core/hot_keys.hpp"

namespace corral::stampede {

namespace {
using prometheus::MetricType;

constexpr const char* kKindNames[] = {"read", "write"};

class HotKeysCollector final : public prometheus::Collectable {
 public:
  explicit HotKeysCollector(const HotKeys& keys) : keys_(keys) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    auto sampled = metrics::make_family(
        "corral_hotkeys_sampled_total",
        "Requests counted by hot-key detection (one in hot_keys.sample), by kind.",
        MetricType::Counter);
    auto rates = metrics::make_family(
        "corral_hotkey_rate",
        "Estimated requests per second of the hottest keys of the last window, by kind and rank "
        "(1 = hottest); CORRAL.HOTKEYS names them.",
        MetricType::Gauge);
    for (std::size_t k = 0; k < kHotKeyKinds; ++k) {
      const auto kind = static_cast<HotKeyKind>(k);
      sampled.metric.push_back(metrics::make_sample({{"kind", kKindNames[k]}}, MetricType::Counter,
                                                    double(keys_.sampled_total(kind))));
      const auto top = keys_.top(kHotKeyRanks, kind);
      for (std::size_t rank = 0; rank < top.size(); ++rank) {
        rates.metric.push_back(
            metrics::make_sample({{"kind", kKindNames[k]}, {"rank", std::to_string(rank + 1)}},
                                 MetricType::Gauge, top[rank].rate));
      }
    }
    return {std::move(sampled), std::move(rates)};
  }

 private:
  const HotKeys& keys_;
};
}  // namespace

std::shared_ptr<prometheus::Collectable> make_hot_keys_collector(const HotKeys& keys) {
  return std::make_shared<HotKeysCollector>(keys);
}

}  // namespace corral::stampede
