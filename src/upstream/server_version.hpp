// The version the upstream Redis reports (its HELLO reply), for Corral's own HELLO.
#pragma once

#include <string>
#include <string_view>

namespace corral::upstream {

// Empty until a handshake has learned it. Thread-safe: any io thread may learn or read it.
std::string known_server_version();
void set_known_server_version(std::string version);
// Learns the version from a HELLO reply: a RESP3 map or the RESP2 flat array of the same pairs.
// Anything else (an error from a server before Redis 6.2) is ignored.
void note_hello_reply(std::string_view reply);

}  // namespace corral::upstream
