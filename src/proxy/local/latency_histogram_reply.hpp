// LATENCY HISTOGRAM and CONFIG RESETSTAT sent through Corral: the upstream's histograms, where the
// commands Corral answers itself carry Corral's counts (proxy/local/local_latency.hpp), and a
// RESETSTAT that Redis accepts resets Corral's counts too.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "proxy/commands/command_table.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

class LocalLatency;

// The rows whose forwarded reply follow_local_latency changes; a length compare for the others.
inline bool follows_local_latency(const CommandSpec& row) {
  return row.name == "latency|histogram" || row.name == "config|resetstat";
}

// `target`, wrapped for LATENCY HISTOGRAM (the merge below) or CONFIG RESETSTAT (reset on +OK to
// the counts of the moment it was sent). Not for commands queued in MULTI: their replies are
// EXEC's.
std::shared_ptr<upstream::ReplyTarget> follow_local_latency(
    const CommandSpec& row, std::span<const std::string_view> argv, LocalLatency& latency,
    std::shared_ptr<upstream::ReplyTarget> target);

// The upstream's LATENCY HISTOGRAM reply (RESP2 flat array or RESP3 map) with the entries of the
// commands Corral answers replaced by Corral's, for the command names of `argv` (all without
// any; a container names its subcommands, `parent|sub` one). Another reply is returned as it is.
std::string merged_latency_histogram(std::string_view upstream_reply,
                                     std::span<const std::string_view> argv,
                                     const LocalLatency& latency);

}  // namespace corral::proxy
