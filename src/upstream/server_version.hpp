// The version the upstream Redis reports (HELLO in a RESP3 handshake), for Corral's own HELLO.
#pragma once

#include <string>

namespace corral::upstream {

// Empty until a handshake has learned it. Thread-safe: any io thread may learn or read it.
std::string known_server_version();
void set_known_server_version(std::string version);

}  // namespace corral::upstream
