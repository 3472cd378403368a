// Cached command names, policy command masks and variant encoding.
#include "stampede/read/cached_command.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "resp/ascii.hpp"

namespace corral::stampede {

namespace {
constexpr std::array<std::string_view, kCachedCommandCount> kNames{
    "GET",    "MGET",   "HGET",   "HGETALL", "HMGET",   "SMEMBERS",
    "LRANGE", "ZRANGE", "EXISTS", "STRLEN",  "GETRANGE"};

}  // namespace

std::string_view command_name(CachedCommand command) {
  return kNames[static_cast<std::size_t>(command)];
}

std::optional<CachedCommand> find_cached_command(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (resp::iequals(kNames[i], name)) return static_cast<CachedCommand>(i);
  }
  return std::nullopt;
}

std::uint32_t command_mask(std::span<const std::string> names) {
  std::uint32_t mask = 0;
  for (const auto& name : names) {
    if (const auto command = find_cached_command(name)) {
      mask |= 1u << static_cast<unsigned>(*command);
    }
  }
  return mask;
}

void build_variant(CachedCommand command, std::span<const std::string_view> argv,
                   std::string& out) {
  out.clear();
  out.append(command_name(command == CachedCommand::mget ? CachedCommand::get : command));
  if (command == CachedCommand::mget) return;
  for (std::size_t i = 2; i < argv.size(); ++i) {
    out.push_back('\0');
    out.append(argv[i]);
  }
}

std::vector<std::string> copy_argv(std::span<const std::string_view> argv) {
  return {argv.begin(), argv.end()};
}

std::vector<std::string_view> view_argv(const std::vector<std::string>& argv) {
  return {argv.begin(), argv.end()};
}

}  // namespace corral::stampede
