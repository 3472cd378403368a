// A decoded RESP2 reply, for the few places where Corral reads a reply's content
// (internal commands, pub/sub bookkeeping, tests). The data plane never builds these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corral::resp {

struct Reply {
  enum class Type { simple, error, integer, bulk, array, null } type = Type::null;
  std::string text;             // simple, error, bulk
  std::int64_t integer = 0;     // integer
  std::vector<Reply> elements;  // array

  friend bool operator==(const Reply&, const Reply&) = default;
};

// Arrays nested deeper than this are refused by decode_reply: the tree is built and destroyed
// recursively, and a reply of a few MB of "*1\r\n" must not overflow the stack.
inline constexpr std::size_t kMaxReplyDepth = 512;

// Decodes exactly one complete reply (as framed by frame_reply); nullopt when it is not one.
// Arrays may nest kMaxReplyDepth deep (a top-level array is depth 1).
std::optional<Reply> decode_reply(std::string_view bytes);

// Encodes a reply back to RESP2 (null as $-1). For any r that decode_reply returned,
// decoding the encoding gives r again.
void append_reply(std::string& out, const Reply& reply);

}  // namespace corral::resp
