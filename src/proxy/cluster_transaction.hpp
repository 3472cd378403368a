// MULTI on a Redis Cluster: the transaction is held by Corral until its first keyed command, then
// bound to that slot's node on a connection of the client's own (WATCH binds the same way); a
// later command of another slot is refused with CROSSSLOT, so EXEC answers EXECABORT.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "proxy/client_state.hpp"
#include "proxy/cluster_router.hpp"
#include "proxy/command_table.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

enum class ClusterStep : std::uint8_t {
  forward,   // the dispatcher sends the request as usual (a bound connection is in place if due)
  answered,  // answered here (held, refused, or failed)
};

// For a client in cluster mode, before the dispatcher picks a connection for `row`.
ClusterStep cluster_transaction_step(ClusterRouter& router, ClientState& client,
                                     const CommandSpec& row, std::string_view bytes,
                                     std::span<const std::string_view> argv, std::uint64_t tag,
                                     const std::shared_ptr<upstream::ReplyTarget>& target);

}  // namespace corral::proxy
