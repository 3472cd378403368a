// Settings that weaken Corral's protection (an unverified upstream certificate, clients let in
// without a password off loopback, refused commands allowed): warned about at start-up and
// exported as a gauge, so that a weakened deployment is never silent.
#pragma once

#include <string>
#include <vector>

#include "config/settings.hpp"

namespace corral::config {

struct WeakenedSetting {
  std::string setting;  // the config key, e.g. "upstream.tls.verify"
  std::string risk;     // one sentence for the log line
};

std::vector<WeakenedSetting> weakened_settings(const Settings& settings);

}  // namespace corral::config
