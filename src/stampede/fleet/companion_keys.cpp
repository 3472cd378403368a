// The inverse of upstream::companion_key for the fleet's suffixes.
#include "stampede/fleet/companion_keys.hpp"

#include "upstream/cluster/hash_tag.hpp"

namespace corral::stampede {

std::optional<std::string_view> companion_owner(std::string_view key) {
  for (const std::string_view suffix : {kShadowSuffix, kLockSuffix}) {
    if (key.size() <= suffix.size() + 1 || !key.ends_with(suffix) ||
        key[key.size() - suffix.size() - 1] != ':') {
      continue;
    }
    const std::string_view owner = key.substr(0, key.size() - suffix.size() - 1);
    // "{K}" wraps a key without a tag of its own; a tagged key keeps its tag as it is.
    if (owner.size() > 2 && owner.front() == '{' && owner.back() == '}' &&
        upstream::hash_tag(owner).size() == owner.size() - 2) {
      return owner.substr(1, owner.size() - 2);
    }
    return owner;
  }
  return std::nullopt;
}

}  // namespace corral::stampede
