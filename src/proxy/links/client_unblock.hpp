// CLIENT UNBLOCK through Corral. Clients know Corral's ids (CLIENT ID), while Redis blocks the
// dedicated upstream connection of a client: Corral learns Redis's id for each dedicated
// connection when it opens one, and unblocks that connection on the server it is open to.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/client_state.hpp"
#include "proxy/local/local_commands.hpp"
#include "upstream/link.hpp"

namespace corral::proxy {

// Call right after client.dedicated was opened, before anything else is sent on it: a CLIENT ID
// goes first on it, and its answer is recorded in the client registry (with the server's address
// on a partitioned upstream) until release_dedicated clears it. A link that moves between servers
// does so again on each connection it moves to (Link::follow_connections).
void learn_upstream_client_id(const ClientState& client);
// The same for client `client_id`'s new `connection` to `node` ("host:port", "" for the single
// upstream).
void learn_upstream_client_id(std::uint64_t client_id, upstream::Link& connection,
                              std::string node);

// The id a CLIENT ID reply names (":<id>\r\n"); 0 for any other reply.
std::int64_t parse_client_id_reply(std::string_view reply);

// CLIENT UNBLOCK id [TIMEOUT|ERROR]: Redis's answer for the client's dedicated connection, or :0
// when Corral knows no blocked connection of that client.
Action client_unblock(LocalCall& call);

}  // namespace corral::proxy
