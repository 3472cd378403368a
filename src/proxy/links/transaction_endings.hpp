// How a transaction ends when Redis cannot end it as asked (transaction_endings.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "proxy/client_state.hpp"
#include "proxy/commands/command_table.hpp"
#include "session/handler.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

// EXEC after a command Corral refused inside MULTI: discard upstream, answer as Redis would.
session::Action abort_transaction(ClientState& client, std::uint64_t tag,
                                  const std::shared_ptr<upstream::ReplyTarget>& target);

// The transaction died with its connection: nothing reaches Redis until the client ends it.
session::Action answer_lost_transaction(ClientState& client, const CommandSpec& row,
                                        std::uint64_t tag,
                                        const std::shared_ptr<upstream::ReplyTarget>& target);

}  // namespace corral::proxy
