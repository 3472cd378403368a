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

// Sent before the command an ASK redirect names (its +OK is nobody's reply).
constexpr std::string_view kAskingCommand = "*1\r\n$6\r\nASKING\r\n";

class ClusterLinks;
// Counts the redirect and, for MOVED, routes the slot to its new owner on this thread and asks
// for a topology refresh (ASK changes nothing). Returns the target node's index in the routes.
int apply_redirect(ClusterLinks& links, const Redirect& redirect);

}  // namespace corral::upstream
