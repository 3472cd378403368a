// SLOWLOG GET / LEN / RESET / HELP in Redis's reply shape, about Corral's own slowlog (the
// upstream's entries are not merged in: docs/slowlog.md), and CORRAL.SLOWLOG with the phases.
#pragma once

#include "proxy/local/local_commands.hpp"

namespace corral::proxy {

Action slowlog_get(LocalCall& call);
Action slowlog_len(LocalCall& call);
Action slowlog_reset(LocalCall& call);
Action slowlog_help(LocalCall& call);
Action corral_slowlog(LocalCall& call);

}  // namespace corral::proxy
