// COMMAND and its subcommands as the upstream answers them (its version's commands, subcommands,
// docs, key extraction and FILTERBY, its errors), with Corral's own commands (CORRAL.*) added.
// The built-in table answers (proxy/commands/command_info.hpp) on a Redis Cluster or a down
// upstream.
#pragma once

#include "proxy/local/local_commands.hpp"

namespace corral::proxy {

Action command_all_upstream(LocalCall& call);
Action command_count_upstream(LocalCall& call);
Action command_info_upstream(LocalCall& call);
Action command_list_upstream(LocalCall& call);
Action command_docs_upstream(LocalCall& call);
Action command_getkeys_upstream(LocalCall& call);

}  // namespace corral::proxy
