// A decoded RESP2 reply, for the few places where Corral reads a reply's content
// (internal commands, pub/sub bookkeeping, tests). The data plane never builds these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corral::resp {

struct Reply {
  enum class Type { simple, error, integer, bulk, array, null } type = Type::null;
  std::string text;               // simple, error, bulk
  std::int64_t integer = 0;       // integer
  std::vector<Reply> elements;    // array
};

// Decodes exactly one complete reply (as framed by frame_reply); nullopt when it is not one.
std::optional<Reply> decode_reply(std::string_view bytes);

}  // namespace corral::resp
