// Per-client connection state that Corral keeps on the client's behalf.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace corral::upstream {
class Connection;
}

namespace corral::proxy {

struct ClientState {
  std::uint64_t id = 0;
  bool authenticated = false;
  bool admin = false;
  int database = 0;
  std::string name;

  // A connection of the client's own, while it is in a stateful mode. The flags say why it is held;
  // it is released once none is set and it has no command in flight.
  std::shared_ptr<upstream::Connection> dedicated;
  bool in_multi = false;
  bool multi_errored = false;  // Corral refused a command queued in MULTI: EXEC must abort
  std::vector<std::string> queued_write_keys;  // keys of writes queued in MULTI, dropped at EXEC
  bool watching = false;
  bool tracking = false;  // CLIENT TRACKING on
  bool sticky = false;    // held until the client leaves (MONITOR, CLIENT REPLY, CLIENT NO-EVICT)
  // Every reply from the dedicated connection goes straight to the client, unmatched to requests:
  // subscribed mode, MONITOR, CLIENT REPLY OFF/SKIP.
  bool tunnel = false;
  bool subscribed = false;
};

// Closes the client's dedicated connection (if any) and clears every mode that held it.
void release_dedicated(ClientState& client);

}  // namespace corral::proxy
