// CLIENT PAUSE / UNPAUSE through Corral: Corral holds its own clients' commands (so that none
// waits on a shared link behind a paused one) and sends the command to the upstream (every primary
// of a cluster), so that Redis's own effects follow: expiry and eviction stop, and clients that do
// not go through Corral are paused too, as an operator pausing writes for a failover expects.
#pragma once

#include <span>
#include <string_view>

#include "proxy/local/local_commands.hpp"

namespace corral::proxy {

// The local handlers. The client gets the upstream's answer. A pause the upstream refuses or
// never gets is undone here too. An unpause lets Corral's clients go once the upstream answered
// it: under PAUSE ALL Redis answers it only at the pause's end, as it answers its own clients.
Action client_pause(LocalCall& call);
Action client_unpause(LocalCall& call);

// Corral's part of a CLIENT PAUSE / UNPAUSE that EXEC ran in Redis (queued inside MULTI as
// itself) and took (`taken`: its element of EXEC's reply is no error).
void pause_ran_in_exec(std::span<const std::string_view> argv, bool taken,
                       upstream::Upstream* upstream);

}  // namespace corral::proxy
