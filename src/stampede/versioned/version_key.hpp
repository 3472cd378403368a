// Key names of versioned policies: `feat:U1` is read as `feat:U1:v<N>` for the current N, and
// CORRAL.PURGE finds a version's keys by a SCAN pattern.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corral::stampede {

// A version is written in decimal without sign, spaces or leading zeros ("0" parses to 0, which
// means "no version"). nullopt for anything else, and on overflow.
std::optional<std::uint64_t> parse_version(std::string_view text);

struct VersionedKey {
  std::string_view user_key;  // the key without its ":v<N>" suffix
  std::uint64_t version = 0;
};
// Splits "<user_key>:v<N>" (N as parse_version reads it, user_key not empty); nullopt when the
// key carries no version suffix.
std::optional<VersionedKey> split_versioned_key(std::string_view key);

// `text` with the glob characters of SCAN MATCH (* ? [ ] \) escaped by a backslash.
std::string glob_escape(std::string_view text);
// The SCAN MATCH pattern of every key of `version` under `prefix`: "<prefix>*:v<version>".
std::string version_pattern(std::string_view prefix, std::uint64_t version);

// The version a key names itself with a trailing ":v<N>", or 0 when it names none.
inline std::uint64_t named_version(std::string_view key) {
  const auto split = split_versioned_key(key);
  return split ? split->version : 0;
}

// `key` without its ":v<N>" suffix (the key readers ask for), or `key` itself.
inline std::string_view unversioned_key(std::string_view key) {
  const auto split = split_versioned_key(key);
  return split ? split->user_key : key;
}

inline std::string versioned_key(std::string_view key, std::uint64_t version) {
  std::string out(key);
  out += ":v";
  out += std::to_string(version);
  return out;
}

}  // namespace corral::stampede
