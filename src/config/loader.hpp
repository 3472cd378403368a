// Loads and validates a YAML config into Settings, collecting every error with its path.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "config/settings.hpp"

namespace corral::config {

struct ConfigErrors {
  // Each line names the file, line and field: "corral.yaml:12: policies[1].ttl: must be > 0".
  std::vector<std::string> messages;
};

using LoadResult = std::variant<Settings, ConfigErrors>;

// Reads `path`; ${NAME} in scalar values is replaced by the environment variable (an error if
// unset,
// ${NAME:-default} supplies a default). Unknown keys are errors. Never throws.
LoadResult load_settings_file(const std::string& path);
// Same, from text already in memory; `source_name` is used in messages.
LoadResult load_settings_text(const std::string& yaml_text, const std::string& source_name);

}  // namespace corral::config
