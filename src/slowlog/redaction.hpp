// Which arguments of a command Redis 7.0 shows as "(redacted)" in SLOWLOG and MONITOR
// (redactClientCommandArgument's callers): secrets never reach either.
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace corral::slowlog {

inline constexpr std::string_view kRedacted = "(redacted)";

// One flag per argument: AUTH's arguments, HELLO's after AUTH, MIGRATE's after AUTH (one) and
// AUTH2 (two), ACL SETUSER's from the user name on, and CONFIG SET's values of masteruser,
// masterauth and requirepass.
std::vector<bool> redacted_arguments(std::span<const std::string_view> argv);

}  // namespace corral::slowlog
