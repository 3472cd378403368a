// What CLIENT PAUSE WRITE holds, as Redis decides it: writes and may-replicate commands (PUBLISH,
// PFCOUNT, scripts), except scripts that declare `no-writes`, and EXEC of a transaction that
// queued any of them.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "proxy/commands/command_table.hpp"

namespace corral::proxy {

// kWrite / kMayReplicate of this request as Redis's pause sees them (0: a WRITE pause lets it
// run). A script's shebang flags replace the command's: EVAL of `#!lua flags=no-writes` is a
// read, `#!lua` alone a write. EVALSHA of a script seen through this process (EVAL or SCRIPT
// LOAD, remember_script) is judged by that script, FCALL by its function's flags as the pause
// learned them (function_flags.hpp); any other by the command's own flags.
std::uint32_t pause_flags(const CommandSpec& row, std::span<const std::string_view> argv);

// Records the flags a script body declares, under its SHA1, for EVALSHA's pause_flags. Bounded:
// past kMaxRememberedScripts the oldest half is forgotten (those scripts are then held as writes).
void remember_script(std::string_view body);
inline constexpr std::size_t kMaxRememberedScripts = 4096;

}  // namespace corral::proxy
