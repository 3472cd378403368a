// A client's blocking commands on its session link: Redis serves blocked clients first come,
// first served, and frees a client that leaves while blocked. Corral keeps both promises.
#pragma once

#include <memory>

#include "proxy/client_state.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

// Wraps the reply target of a blocking command about to be sent on client.dedicated, so that
// blocked_in_redis() knows when Redis holds the client blocked.
std::shared_ptr<upstream::ReplyTarget> track_blocking_reply(
    ClientState& client, std::shared_ptr<upstream::ReplyTarget> target);

// True while a blocking command of the client's is unanswered on its dedicated link.
bool blocked_in_redis(const ClientState& client);

// The client leaves its idle dedicated link (no command in flight, no state held) for the shared
// connections. A link that carried a blocking command is kept, clean and open, for the next one;
// any other is closed (release_dedicated).
void set_dedicated_aside(ClientState& client);

// Makes the kept link the client's dedicated link when it serves `partition` with the client's
// database and protocol and is still up; otherwise closes it. True when taken.
bool take_kept_link(ClientState& client, int partition);

}  // namespace corral::proxy
