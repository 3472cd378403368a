// INFO: Corral's own sections, shaped like Redis's so tools that parse INFO keep working.
#pragma once

#include "proxy/local_commands.hpp"

namespace corral::proxy {

Action info(LocalCall& call);

}  // namespace corral::proxy
