// Redis Cluster hash tags: which part of a key picks its slot, and companion keys that land in
// the same slot as a user key (so one Lua script may touch both, on a cluster too).
#pragma once

#include <string>
#include <string_view>

namespace corral::upstream {

// The bytes Redis Cluster hashes: the first "{...}" with something inside, else the whole key.
inline std::string_view hash_tag(std::string_view key) {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

// "<key>:<suffix>" when the key has a tag of its own (the companion keeps it), else
// "{<key>}:<suffix>", whose tag is the whole key.
inline std::string companion_key(std::string_view key, std::string_view suffix) {
  std::string out;
  const bool tagged = hash_tag(key).size() != key.size();
  out.reserve(key.size() + suffix.size() + 3);
  if (!tagged) out += '{';
  out += key;
  if (!tagged) out += '}';
  out += ':';
  out += suffix;
  return out;
}

}  // namespace corral::upstream
