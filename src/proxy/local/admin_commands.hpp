// CORRAL.* admin commands: inspect and invalidate the cache, read per-policy counters.
#pragma once

#include "proxy/local/local_commands.hpp"

namespace corral::proxy {

// True, with a NOPERM error appended, when an admin password is set and the client lacks it.
bool refused_unless_admin(LocalCall& call);

Action corral_info(LocalCall& call);
Action corral_invalidate(LocalCall& call);
Action corral_stats(LocalCall& call);

}  // namespace corral::proxy
