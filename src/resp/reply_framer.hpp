// Finds where one upstream RESP2 or RESP3 reply ends in a byte stream, without building objects.
#pragma once

#include <cstddef>
#include <string_view>

namespace corral::resp {

struct FrameLimits {
  std::size_t max_bulk_length = 1024u * 1024 * 1024;
  std::size_t max_elements = 64u * 1024 * 1024;
};

enum class FrameStatus { complete, need_more, invalid };

struct FrameResult {
  FrameStatus status = FrameStatus::need_more;
  std::size_t size = 0;  // bytes of the reply when complete
};

// Contract: examines the front of `input`; complete means input.substr(0, size) is exactly one
// reply: RESP2 (simple string, error, integer, bulk, array of any nesting, null bulk/array) or
// RESP3 (map, set, push, null, boolean, double, big number, verbatim, blob error, streamed
// strings and aggregates; an attribute and the reply it annotates are one reply). max_elements
// bounds every aggregate's announced items (a map of n pairs counts 2n).
FrameResult frame_reply(std::string_view input, const FrameLimits& limits = {});

}  // namespace corral::resp
