// CLIENT LIST / INFO / KILL and the local part of PAUSE / UNPAUSE on Corral's own clients (the
// process's registry), not on Corral's upstream connections.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "proxy/local/local_commands.hpp"

namespace corral::proxy {

Action client_list(LocalCall& call);
Action client_info(LocalCall& call);
Action client_kill(LocalCall& call);

// CLIENT PAUSE's arguments as Redis checks them: nullopt, with Redis's error in `error`, when
// they are wrong. The timeout is capped at a year ("until CLIENT UNPAUSE").
struct PauseRequest {
  std::chrono::milliseconds timeout;
  bool all;  // ALL (the default), else WRITE
};
std::optional<PauseRequest> parse_pause(std::span<const std::string_view> argv, std::string& error);

// Corral's own part of CLIENT PAUSE / UNPAUSE: its clients' commands held (all, or what a WRITE
// pause holds) until the end, or let go. `upstream` (may be null) is asked which functions
// declare no-writes. The upstream's part is forwarded_pause.hpp's.
void pause_clients(const PauseRequest& pause, upstream::Upstream* upstream);
void unpause_clients();

}  // namespace corral::proxy
