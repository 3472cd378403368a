// The redirect errors of Redis Cluster, "-MOVED <slot> <host>:<port>" and "-ASK ...", read for
// the connections Corral follows them on.
#pragma once

#include <optional>
#include <string_view>

#include "config/settings.hpp"

namespace corral::upstream {

struct Redirect {
  bool moved = false;  // MOVED (the slot's owner changed); else ASK (this command only)
  int slot = -1;
  config::Endpoint to;
};

// The redirect in `reply` (one complete RESP error); nullopt for any other reply.
std::optional<Redirect> read_redirect(std::string_view reply);

}  // namespace corral::upstream
