// The weakened-settings gauge: a fixed set of series decided at start-up.
#include "metrics/weakened_settings_metrics.hpp"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <utility>

namespace corral::metrics {
namespace {

class WeakenedSettingsCollector final : public prometheus::Collectable {
 public:
  explicit WeakenedSettingsCollector(std::vector<config::WeakenedSetting> weakened)
      : weakened_(std::move(weakened)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily family;
    family.name = "corral_weakened_setting";
    family.help =
        "1 for each setting in force that weakens Corral's protection (logged at start-up).";
    family.type = prometheus::MetricType::Gauge;
    for (const auto& weakened : weakened_) {
      family.metric.emplace_back();
      family.metric.back().label.push_back({"setting", weakened.setting});
      family.metric.back().gauge.value = 1;
    }
    return {std::move(family)};
  }

 private:
  std::vector<config::WeakenedSetting> weakened_;
};

}  // namespace

std::shared_ptr<prometheus::Collectable> make_weakened_settings_metrics(
    std::vector<config::WeakenedSetting> weakened) {
  return std::make_shared<WeakenedSettingsCollector>(std::move(weakened));
}

}  // namespace corral::metrics
