// CLIENT LIST / INFO / KILL / PAUSE / UNPAUSE on Corral's own clients (the process's registry),
// not on Corral's upstream connections.
#pragma once

#include "proxy/local/local_commands.hpp"

namespace corral::proxy {

Action client_list(LocalCall& call);
Action client_info(LocalCall& call);
Action client_kill(LocalCall& call);
Action client_pause(LocalCall& call);
Action client_unpause(LocalCall& call);

}  // namespace corral::proxy
