// Reading what the replica poller asks: SENTINEL REPLICAS' list and INFO replication's offsets.
// Pure parsing, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "config/settings.hpp"

namespace corral::upstream {

// SENTINEL REPLICAS' reply (RESP2 bytes): the replicas the Sentinel does not flag as down or
// disconnected; empty for anything else.
std::vector<config::Endpoint> parse_sentinel_replicas(std::string_view reply);

// The numeric field `name` of an INFO reply (RESP2 bulk bytes): master_repl_offset,
// slave_repl_offset; nullopt when absent or not a number.
std::optional<std::uint64_t> info_number(std::string_view reply, std::string_view name);

// INFO replication of a replica says its link to the primary is up.
bool info_link_up(std::string_view reply);

}  // namespace corral::upstream
