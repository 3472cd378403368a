// describe(): the settings tables' show side, emitted as YAML.
#include "config/settings_dump.hpp"

#include "config/schema.hpp"

namespace corral::config {

std::string describe(const Settings& settings) {
  YAML::Emitter out;
  out << schema::show_map(schema::settings_table(), settings);
  std::string text = "# effective settings";
  if (!settings.source.empty()) text += " loaded from " + settings.source;
  return text + "\n" + out.c_str() + "\n";
}

}  // namespace corral::config
