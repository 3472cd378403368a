// COMMAND and its subcommands, answered from Corral's command table.
#pragma once

#include "proxy/local_commands.hpp"

namespace corral::proxy {

Action command_all(LocalCall& call);
Action command_count(LocalCall& call);
Action command_info(LocalCall& call);
Action command_list(LocalCall& call);
Action command_getkeys(LocalCall& call);

}  // namespace corral::proxy
