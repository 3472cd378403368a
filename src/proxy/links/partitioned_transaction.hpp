// MULTI on a partitioned upstream (a Redis Cluster): the transaction is held by Corral until its
// first keyed command, then bound to that partition's server on a link of the client's own (WATCH
// binds the same way); a later command of another partition is refused with CROSSSLOT, so EXEC
// answers EXECABORT.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "proxy/client_state.hpp"
#include "proxy/commands/command_table.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

enum class TransactionStep : std::uint8_t {
  forward,   // the dispatcher sends the request as usual (a bound connection is in place if due)
  answered,  // answered here (held, refused, or failed)
  // The transaction's slot has a failing primary: nothing was answered or sent; the dispatcher
  // waits for the promoted replica and calls again, or gives up with fail_transaction_link().
  link_failing,
};

// For a client of a partitioned upstream, before the dispatcher picks a connection for `row`
// (`command` is the request as the upstream sees it).
TransactionStep partitioned_transaction_step(upstream::Upstream& upstream, ClientState& client,
                                             const CommandSpec& row,
                                             const upstream::Routed& command, std::uint64_t tag,
                                             const std::shared_ptr<upstream::ReplyTarget>& target);

// A held transaction whose link could not be opened: what was held is dropped, EXEC will answer
// EXECABORT, and the request gets `error`.
void fail_transaction_link(ClientState& client, std::uint64_t tag,
                           const std::shared_ptr<upstream::ReplyTarget>& target,
                           std::string_view error);

}  // namespace corral::proxy
