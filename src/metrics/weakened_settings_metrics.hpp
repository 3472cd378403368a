// /metrics family of the settings that weaken Corral's protection (config/weakened_settings.hpp).
#pragma once

#include <memory>
#include <vector>

#include "config/weakened_settings.hpp"

namespace prometheus {
class Collectable;
}

namespace corral::metrics {

// corral_weakened_setting{setting="upstream.tls.verify"} 1 for each one in force at start-up.
std::shared_ptr<prometheus::Collectable> make_weakened_settings_metrics(
    std::vector<config::WeakenedSetting> weakened);

}  // namespace corral::metrics
