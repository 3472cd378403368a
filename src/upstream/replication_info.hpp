// Reading INFO replication's answers: a node's replication offset and its replica link, and the
// rule max_replica_lag applies to them. Pure, no I/O; shared by the Sentinel and cluster pollers.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace corral::upstream {

// The numeric field `name` of an INFO reply (RESP2 bulk bytes): master_repl_offset,
// slave_repl_offset; nullopt when absent or not a number.
std::optional<std::uint64_t> info_number(std::string_view reply, std::string_view name);

// INFO replication of a replica says its link to the primary is up.
bool info_link_up(std::string_view reply);

// A replica at `replica_offset` may serve reads under max_replica_lag `max_lag` (0: any lag)
// when its primary was at `primary_offset` (polled just before): without the primary's offset
// the lag is unknown, and such a replica is not trusted.
bool within_replica_lag(std::optional<std::uint64_t> primary_offset, std::uint64_t replica_offset,
                        std::uint64_t max_lag);

}  // namespace corral::upstream
