// Key names of versioned policies: `feat:U1` is read as `feat:U1:v<N>` for the current N.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace corral::stampede {

// The version a key names itself with a trailing ":v<digits>", or 0 when it names none.
inline std::uint64_t named_version(std::string_view key) {
  const auto marker = key.rfind(":v");
  if (marker == std::string_view::npos || marker + 2 == key.size()) return 0;
  std::uint64_t version = 0;
  for (const char c : key.substr(marker + 2)) {
    if (c < '0' || c > '9' || version > (UINT64_MAX - 9) / 10) return 0;
    version = version * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return version;
}

// `key` without its ":v<N>" suffix (the key readers ask for), or `key` itself.
inline std::string_view unversioned_key(std::string_view key) {
  return named_version(key) == 0 ? key : key.substr(0, key.rfind(":v"));
}

inline std::string versioned_key(std::string_view key, std::uint64_t version) {
  std::string out(key);
  out += ":v";
  out += std::to_string(version);
  return out;
}

}  // namespace corral::stampede
