// What a Sentinel's pub/sub message means for the primary it names: a failover about to
// promote a replica, a promotion, the switch, or an aborted failover. Pure parsing, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/settings.hpp"

namespace corral::upstream {

enum class SentinelEventKind : std::uint8_t {
  // A failover has begun (a replica is about to be promoted, or is being): writes sent to the
  // old primary from now on may be acknowledged and then discarded when it is turned into a
  // replica.
  failover_starting,
  promoted,  // a replica was promoted: `primary` is the new primary
  switched,  // +switch-master: `primary` is the new primary
  aborted,   // the failover stopped before any promotion: the primary stays
  // A replica appeared, went down or came back, or was (re)attached to the primary: the list
  // of replicas that may serve reads is asked again.
  replicas_changed,
};

struct SentinelEvent {
  SentinelEventKind kind;
  std::string master;        // the monitored name the event is about
  config::Endpoint primary;  // promoted / switched only
  config::Endpoint from;     // failover_starting only: the primary being replaced
};

// The channels a Corral subscribes to on each Sentinel: every one of them parses.
std::span<const std::string_view> sentinel_event_channels();

// The event a message on `channel` announces; nullopt for a channel Corral does not follow or a
// payload it cannot read.
std::optional<SentinelEvent> parse_sentinel_event(std::string_view channel,
                                                  std::string_view payload);

// SENTINEL GET-MASTER-ADDR-BY-NAME's reply (RESP2 bytes): the primary, or nullopt (unknown
// name, or not a [host, port] pair).
std::optional<config::Endpoint> parse_master_address(std::string_view reply);

// ROLE's reply (RESP2 bytes) names a primary.
bool role_is_primary(std::string_view reply);

}  // namespace corral::upstream
