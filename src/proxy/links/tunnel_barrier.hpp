// The tunnel barrier: a PING carrying Corral's token, sent on a RESP2 subscribed client's
// dedicated connection after a command that may end its subscriptions (or fail to start them).
// Its reply comes after the replies to everything sent before it, and its shape says whether
// Redis still holds the connection subscribed: there RESP2 answers PING with an array, elsewhere
// with a bulk string. Until it is back, the client's next commands wait: forwarded as they are,
// one of them could otherwise run on a connection Redis no longer holds subscribed (SCRIPT DEBUG
// SYNC, CLIENT REPLY OFF, AUTH: the commands Corral refuses or emulates everywhere else).
#pragma once

#include <string>
#include <string_view>

namespace corral::proxy {

enum class BarrierReply {
  not_barrier,     // a reply to one of the client's commands, or a message
  subscribed,      // Redis still holds the connection subscribed
  not_subscribed,  // Redis has left subscribed mode (or never entered it)
  refused,         // the upstream ACL user may not PING: the state is not known
};

// The barrier request, as bytes for the wire (the same for the whole process).
std::string_view barrier_request();

// Redis's reply to the barrier while it holds the connection subscribed, or not.
std::string_view barrier_reply(bool subscribed);

// What `reply` says, when it is the barrier's.
BarrierReply read_barrier_reply(std::string_view reply);

// Redis's answer to a command a RESP2 subscribed client may not run; `command` is the row's name
// ("script|debug"), as Redis names it in this error.
void append_subscribed_context_error(std::string& out, std::string_view command);

// Commands Redis runs for a RESP2 subscribed client: (P|S)(UN)SUBSCRIBE, PING, QUIT, RESET.
bool allowed_while_subscribed(std::string_view command);

}  // namespace corral::proxy
