// A decoded RESP2 or RESP3 reply, for the few places where Corral reads a reply's content
// (internal commands, pub/sub bookkeeping, RESP3 conversion of cached replies, tests). The data
// plane never builds these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corral::resp {

struct Reply {
  enum class Type {
    simple,
    error,
    integer,
    bulk,
    array,
    null,  // RESP2's $-1 / *-1
    // RESP3
    map,          // elements: key, value, key, value ...
    set,          // elements
    push,         // elements
    attribute,    // elements: key, value ... then the annotated reply last
    nil,          // _
    boolean,      // integer: 0 or 1
    double_type,  // text: as sent ("1.5", "inf")
    big_number,   // text
    verbatim,     // text: with its format prefix ("txt:...")
    blob_error,   // text
  } type = Type::null;
  std::string text;             // simple, error, bulk and the RESP3 texts
  std::int64_t integer = 0;     // integer, boolean
  std::vector<Reply> elements;  // array and the RESP3 aggregates

  friend bool operator==(const Reply&, const Reply&) = default;
};

// Aggregates nested deeper than this are refused by decode_reply: the tree is built and destroyed
// recursively, and a reply of a few MB of "*1\r\n" must not overflow the stack.
inline constexpr std::size_t kMaxReplyDepth = 512;

// Decodes exactly one complete reply (as framed by frame_reply); nullopt when it is not one.
// Aggregates may nest kMaxReplyDepth deep (a top-level array is depth 1). Streamed strings and
// aggregates decode as their fixed-length forms.
std::optional<Reply> decode_reply(std::string_view bytes);

// Encodes a reply back to RESP (null as $-1, every RESP3 type as itself). For any r that
// decode_reply returned, decoding the encoding gives r again.
void append_reply(std::string& out, const Reply& reply);

// True when the reply and everything in it is RESP2.
bool is_resp2(const Reply& reply);

}  // namespace corral::resp
