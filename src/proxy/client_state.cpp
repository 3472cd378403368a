// Leaving the stateful modes that hold a dedicated upstream connection.
#include "proxy/client_state.hpp"

#include "upstream/connection.hpp"

namespace corral::proxy {

void release_dedicated(ClientState& client) {
  if (client.dedicated) {
    // Closing must not reach the client as a lost subscription: it no longer has one.
    client.dedicated->set_unsolicited_target(nullptr);
    client.dedicated->close();
  }
  client.dedicated.reset();
  client.in_multi = client.multi_errored = client.watching = client.tracking = false;
  client.sticky = false;
  client.tunnel = client.subscribed = false;
  client.queued_write_keys.clear();
}

}  // namespace corral::proxy
