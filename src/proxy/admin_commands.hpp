// CORRAL.* admin commands: inspect and invalidate the cache, read per-policy counters.
#pragma once

#include "proxy/local_commands.hpp"

namespace corral::proxy {

Action corral_info(LocalCall& call);
Action corral_invalidate(LocalCall& call);
Action corral_stats(LocalCall& call);

}  // namespace corral::proxy
