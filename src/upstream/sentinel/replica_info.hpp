// Reading what the Sentinel replica poller asks the Sentinels: SENTINEL REPLICAS' list. Pure
// parsing, no I/O (INFO replication's offsets: upstream/replication_info.hpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "config/settings.hpp"

namespace corral::upstream {

// SENTINEL REPLICAS' reply (RESP2 bytes): the replicas the Sentinel does not flag as down or
// disconnected; empty for anything else.
std::vector<config::Endpoint> parse_sentinel_replicas(std::string_view reply);

}  // namespace corral::upstream
