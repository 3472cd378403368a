// The dispatcher's choice of a client's session link: kept, reused, opened, or waited for while
// the slot's primary fails over (Dispatcher::acquire_dedicated).
#include <chrono>

#include "proxy/client_state.hpp"
#include "proxy/dispatcher.hpp"
#include "proxy/links/blocking_session.hpp"
#include "proxy/links/client_unblock.hpp"
#include "upstream/errors.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

// Commands of one client must run in order, so it switches connections only when idle; false
// when it must drain first.
Dispatcher::LinkStep Dispatcher::acquire_dedicated(ClientState& client, Path path,
                                                   std::size_t awaiting,
                                                   const upstream::Routed& command) {
  auto& client_upstream = upstream_for(client);
  if (path != Path::shared && awaiting == 0 && !client.mode.holds_connection() &&
      (client.dedicated || client.kept.link) &&
      (!client.dedicated || client.dedicated->in_flight() == 0) &&
      client.dedicated_generation != client_upstream.generation()) {
    // Opened on an upstream that a reload replaced, and the client's state there has ended: its
    // next session starts on the upstream in use.
    release_dedicated(client);
  }
  if (client.dedicated && !client.mode.holds_connection() && path == Path::shared &&
      awaiting == 0 && client.dedicated->in_flight() == 0) {
    set_dedicated_aside(client);
  }
  if (client.dedicated || path == Path::shared) return LinkStep::ready;
  if (awaiting > 0) return LinkStep::drain;
  // Blocking commands and WATCH go to their keys' server; a keyless one (SUBSCRIBE, MULTI) to
  // any (classic pub/sub reaches every node of a cluster).
  const int partition = client_upstream.partition_of(command);
  if (partition == upstream::kSpansPartitions) return LinkStep::ready;  // refused by forward()
  // A kept link is open already: nothing goes before the command, which so keeps its place among
  // the commands of other clients that Redis will block.
  if (!take_kept_link(client, partition)) {
    if (!open_dedicated(client, partition, command)) return LinkStep::wait;
    if (client.dedicated) learn_upstream_client_id(client);
  }
  client.cluster_slot = partition;
  return LinkStep::ready;
}

bool Dispatcher::open_dedicated(ClientState& client, int partition,
                                const upstream::Routed& command) {
  auto& client_upstream = upstream_for(client);
  auto opened = client_upstream.open_session_link(partition, command);
  if (!opened.link && waits_for_failover(client, opened.refusal)) return false;
  client.link_wait_since = {};
  client.dedicated = std::move(opened.link);
  client.dedicated_generation = client_upstream.generation();
  return true;
}

// A session link refused because its slot's primary is failing waits for the promoted replica,
// as a keyed request does: upstream.failover_hold from its first try, then the error. Later
// requests of the client wait behind it, so its commands keep their order.
bool Dispatcher::waits_for_failover(ClientState& client, upstream::ErrorKind refusal) {
  if (refusal != upstream::ErrorKind::failing_over) {
    client.link_wait_since = {};
    return false;
  }
  const auto now = std::chrono::steady_clock::now();
  if (client.link_wait_since == std::chrono::steady_clock::time_point{}) {
    client.link_wait_since = now;
  }
  if (now - client.link_wait_since < settings_.upstream.failover_hold) return true;
  client.link_wait_since = {};
  return false;
}

}  // namespace corral::proxy
