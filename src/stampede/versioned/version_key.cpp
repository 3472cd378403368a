// Parsing and patterns of versioned key names.
#include "stampede/versioned/version_key.hpp"

#include <charconv>

namespace corral::stampede {

std::optional<std::uint64_t> parse_version(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text.front() == '0')) return std::nullopt;
  std::uint64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<VersionedKey> split_versioned_key(std::string_view key) {
  const auto marker = key.rfind(":v");
  if (marker == std::string_view::npos || marker == 0) return std::nullopt;
  const auto version = parse_version(key.substr(marker + 2));
  if (!version) return std::nullopt;
  return VersionedKey{key.substr(0, marker), *version};
}

std::string glob_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string version_pattern(std::string_view prefix, std::uint64_t version) {
  return glob_escape(prefix) + "*:v" + std::to_string(version);
}

}  // namespace corral::stampede
