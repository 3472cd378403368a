// COMMAND and its subcommands, answered from Corral's command table.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/local/local_commands.hpp"

namespace corral::proxy {

// The answers below are the built-in table's, used when the upstream cannot answer (a Redis
// Cluster, a down upstream); proxy/commands/command_upstream.hpp forwards COMMAND otherwise.

Action command_all(LocalCall& call);
Action command_count(LocalCall& call);
Action command_info(LocalCall& call);
Action command_list(LocalCall& call);
Action command_getkeys(LocalCall& call);

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob], as Redis 7.0 parses it.
struct ListFilter {
  enum class Kind { none, module, aclcat, pattern } kind = Kind::none;
  std::string_view value;
  // Whether the built-in table's `name` is listed: PATTERN matches without case; the table knows
  // no module or ACL category, so those list none of its rows.
  bool admits(std::string_view name) const;
};
// nullopt for a syntax error (what Redis answers "ERR syntax error" to).
std::optional<ListFilter> parse_list_filter(std::span<const std::string_view> argv);

// Corral's own commands (CORRAL.*), which no Redis knows: COMMAND adds them to the upstream's.
inline constexpr std::string_view kOwnPrefix = "corral.";
bool is_own_command(std::string_view name);
std::vector<const CommandSpec*> own_commands();
// One COMMAND INFO entry for `spec`, in the client's protocol.
void append_command_entry(std::string& out, const CommandSpec& spec, int protocol);

}  // namespace corral::proxy
