// CORRAL.HOTKEYS [COUNT n] [READS|WRITES]: the hottest keys of the last detection window.
#pragma once

#include "proxy/local/local_commands.hpp"

namespace corral::proxy {

Action corral_hotkeys(LocalCall& call);

}  // namespace corral::proxy
