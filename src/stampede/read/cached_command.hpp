// The read commands a policy may cache, and how one request names its cached unit (the reply to
// one command on one key: the key plus a variant built from the command and its arguments).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corral::stampede {

enum class CachedCommand : std::uint8_t {
  get,
  mget,
  hget,
  hgetall,
  hmget,
  smembers,
  lrange,
  zrange,
  exists,
  strlen,
  getrange,
};
inline constexpr std::size_t kCachedCommandCount = 11;

// Upper-case names, indexed by CachedCommand; also the first part of every variant.
std::string_view command_name(CachedCommand command);
// Case-insensitive, so both the command table's rows ("get") and config names ("GET") work.
std::optional<CachedCommand> find_cached_command(std::string_view name);

// A policy's `commands` list as a bit set (bit = CachedCommand); unknown names are ignored
// (config validation rejects them).
std::uint32_t command_mask(std::span<const std::string> names);
inline bool mask_has(std::uint32_t mask, CachedCommand command) {
  return (mask >> static_cast<unsigned>(command)) & 1u;
}

// The variant of `argv` (argv[1] is the key): the upper-case command name, then every argument
// after the key, each preceded by '\0' ("HGET\0field", "LRANGE\0start\0stop"). Writes into `out`
// (cleared first) so a hit reuses one buffer. MGET's keys are cached as GET variants.
void build_variant(CachedCommand command, std::span<const std::string_view> argv, std::string& out);

// argv as owned strings, for work that outlives the request (refreshes, passthrough).
std::vector<std::string> copy_argv(std::span<const std::string_view> argv);
std::vector<std::string_view> view_argv(const std::vector<std::string>& argv);

}  // namespace corral::stampede
