// Frames one client request (RESP2 multibulk or inline) from the front of a read buffer.
// Arguments are slices of the buffer (or of `scratch` for unescaped inline arguments): no copy per
// argument.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace corral::resp {

struct RequestLimits {
  std::size_t max_bulk_length = 512u * 1024 * 1024;
  std::size_t max_elements = 1024 * 1024;
  std::size_t max_inline_length = 64 * 1024;
};

// Before AUTH, as Redis 6.2+ (CVE-2021-32675): a client that has not authenticated may send small
// requests only, so that unauthenticated connections cannot make the proxy buffer much.
inline constexpr RequestLimits kBeforeAuthLimits{16 * 1024, 10, 16 * 1024};
// A whole request still arriving before AUTH: every argument at its limit, plus framing.
inline constexpr std::size_t kMaxRequestBeforeAuth = 10 * (16 * 1024 + 32);

enum class ParseStatus { ok, need_more, invalid, too_large };

struct ParseResult {
  ParseStatus status = ParseStatus::need_more;
  // Bytes of the request (ok), or bytes to skip (an empty inline line also yields ok with argv
  // empty).
  std::size_t consumed = 0;
  // True when the request came in inline (telnet) form: its raw bytes are not RESP and must be
  // re-encoded.
  bool inline_form = false;
  // Redis-style text for invalid / too_large, without the leading "-ERR " (static storage).
  std::string_view error;
};

// Contract: parses at most one request from the front of `input`.
// - ok: argv holds the arguments; slices stay valid while `input` and `scratch` are unchanged.
//   argv is cleared on every call, and scratch is overwritten by the next quoted inline request,
//   so use one request's argv before parsing the next with the same scratch.
// - need_more: nothing consumed; call again with more bytes appended.
// - invalid / too_large: the stream is broken; answer `-ERR <error>` and close the connection.
// No buffer is ever sized from an unchecked wire length.
ParseResult parse_request(std::string_view input, const RequestLimits& limits,
                          std::vector<std::string_view>& argv, std::string& scratch);

}  // namespace corral::resp
