// Commands that must reach a busy server at once (SCRIPT KILL, FUNCTION KILL, SHUTDOWN): they
// travel on a connection of their own, never queued behind the shared connection's backlog.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "upstream/link.hpp"

namespace corral::proxy {

// Sends `command` on a new connection of `database` that is closed once its one reply (or
// failure) has reached `target`. Same contract as Link::send: false when nothing was queued.
bool send_out_of_band(upstream::Links& links, int database, std::string_view command,
                      const std::shared_ptr<upstream::ReplyTarget>& target, std::uint64_t tag);

}  // namespace corral::proxy
