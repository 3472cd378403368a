// Commands that must reach a busy server at once (SCRIPT KILL, FUNCTION KILL, SHUTDOWN): they
// travel on a connection of their own, never queued behind the shared connection's backlog.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "upstream/link.hpp"

namespace corral::upstream {

// Sends `command` on `link`, a new connection that is closed once its one reply (or failure) has
// reached `target`. Same contract as Link::send: false when nothing was queued (then closed).
bool send_once(std::shared_ptr<Link> link, std::string_view command,
               const std::shared_ptr<ReplyTarget>& target, std::uint64_t tag);

}  // namespace corral::upstream
