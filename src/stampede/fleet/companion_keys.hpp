// Which keys are Corral's own fleet bookkeeping in Redis (a policy key's shared copy and lock,
// the tag purge counters), so that a client's write to them can be refused.
#pragma once

#include <optional>
#include <string_view>

namespace corral::stampede {

// The suffixes of a fleet policy key's companions (upstream::companion_key adds them).
inline constexpr std::string_view kShadowSuffix = "corral:shadow";
inline constexpr std::string_view kLockSuffix = "corral:lock";

// The user key whose shared copy or lock `key` is ("{feat:U1}:corral:shadow" -> "feat:U1",
// "feat:{U1}:corral:lock" -> "feat:{U1}"); nullopt for any other key.
std::optional<std::string_view> companion_owner(std::string_view key);

}  // namespace corral::stampede
