// SELECT queued inside MULTI: Redis runs it at EXEC, so the client's database changes only when
// EXEC does run the transaction (not after DISCARD, EXECABORT or a WATCH that failed).
#pragma once

#include <memory>

#include "proxy/client_state.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

// `reply_to` for the client's EXEC: wrapped, when a SELECT is queued, so that EXEC's reply
// records the database for apply_database_after_exec. Clears what was queued either way.
std::shared_ptr<upstream::ReplyTarget> select_at_exec(
    ClientState& client, std::shared_ptr<upstream::ReplyTarget> reply_to);

// Moves the client to the database a transaction's SELECT chose, once EXEC's reply has come
// (until then its commands still travel the link that ran EXEC).
void apply_database_after_exec(ClientState& client);

}  // namespace corral::proxy
