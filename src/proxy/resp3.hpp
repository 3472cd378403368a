// What changes for a client that speaks RESP3 (HELLO 3): which commands answer with pushes, and
// how a cached reply (stored once, as RESP2) is shown to it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "proxy/commands/command_table.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

inline constexpr int kResp2 = 2;
inline constexpr int kResp3 = 3;

// In RESP3, Redis confirms (P|S)SUBSCRIBE and (P|S)UNSUBSCRIBE with one push per channel instead
// of a reply, subscribed or not: such a command gets no tracked reply slot on the connection.
bool replies_with_pushes(const CommandSpec& row);

// The cache keeps one copy of each reply, in RESP2, and converts it for RESP3 clients. Caching per
// protocol would store two copies of hot keys, and every origin (http, the fleet's shared copy in
// Redis, versioned keys) produces RESP2; the reads a policy may cache differ between the protocols
// only in a few well-known shapes (nulls, HGETALL as a map, SMEMBERS as a set, ZRANGE WITHSCORES
// as [member, score] pairs), so the conversion is small and exact.
// `command` is the table row ("get", "hgetall" ...), argv the request.
void append_as_resp3(std::string& out, std::string_view command,
                     std::span<const std::string_view> argv, std::string_view resp2_reply);

// Forwards to `client`, converting replies with append_as_resp3.
std::shared_ptr<upstream::ReplyTarget> resp3_target(std::shared_ptr<upstream::ReplyTarget> client,
                                                    std::string_view command,
                                                    std::span<const std::string_view> argv);

}  // namespace corral::proxy
