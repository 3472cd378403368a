// Renders the effective Settings as YAML for `corral --check-config`, with secrets masked.
#pragma once

#include <string>

#include "config/settings.hpp"

namespace corral::config {

// Every key with its effective value (defaults included), in the order of the example config.
// Passwords and credential-bearing HTTP headers read "********". Apart from those, the text loads
// back into the same Settings.
std::string describe(const Settings& settings);

}  // namespace corral::config
