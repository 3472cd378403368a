// How an http origin answers the string commands: the command read from argv, and an HTTP
// body (200) or its absence (404) turned into the RESP reply Redis would give. Pure (no I/O).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "origin/origin.hpp"

namespace corral::origin {

enum class StringCommand : std::uint8_t { get, exists, strlen, getrange };

struct StringRequest {
  StringCommand command = StringCommand::get;
  std::string_view key;    // points into argv
  std::int64_t start = 0;  // GETRANGE only
  std::int64_t end = 0;
};

// argv[0] in any case: GET key, EXISTS key, STRLEN key, GETRANGE key start end. Anything else
// yields nullopt and sets `error` to the RESP error reply Redis would send (arity, integers).
std::optional<StringRequest> parse_string_request(std::span<const std::string_view> argv,
                                                  std::string& error);

// Redis GETRANGE on `value`: inclusive [start, end], negative indexes count from the end.
std::string_view getrange(std::string_view value, std::int64_t start, std::int64_t end);

// The reply when the origin has the value (HTTP 200 with `body`): Outcome::value.
std::string found_reply(const StringRequest& request, std::string_view body);
// The reply when it does not (HTTP 404): Outcome::nil, cached for negative_ttl.
std::string_view not_found_reply(const StringRequest& request);

}  // namespace corral::origin
