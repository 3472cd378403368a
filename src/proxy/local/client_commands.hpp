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

// CLIENT PAUSE's and UNPAUSE's work, with their reply appended to `reply`; also run by EXEC for a
// pause queued inside MULTI (queued_pause.hpp). `upstream` (may be null) is asked which functions
// declare no-writes.
void pause_clients(std::span<const std::string_view> argv, upstream::Upstream* upstream,
                   std::string& reply);
void unpause_clients(std::string& reply);

}  // namespace corral::proxy
