// Finds the end of one RESP2 reply without recursion or allocation: a single counter of items still
// to read replaces the parser stack, so nesting depth costs nothing and cannot overflow anything.
#include "resp/reply_framer.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

#include "resp/int_parse.hpp"

namespace corral::resp {
namespace {

// A numeric line holds at most "-9223372036854775808"; anything longer is garbage, so the CR search
// stops here instead of scanning a whole buffer of it.
constexpr std::size_t kMaxNumberLine = 24;

enum class Step { ok, need_more, invalid };

struct Line {
  Step step = Step::need_more;
  std::string_view text;  // between the type byte and "\r\n"
  std::size_t next = 0;   // position after "\r\n"
};

// Simple strings and errors end at the first CRLF; a lone CR inside is content, as in hiredis.
Line text_line(std::string_view input, std::size_t pos) {
  const char* const begin = input.data();
  const char* const end = begin + input.size();
  const char* p = begin + pos + 1;
  while (p < end) {
    const auto* cr =
        static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(end - p)));
    if (cr == nullptr || cr + 1 == end) return {};
    if (cr[1] == '\n') {
      const auto cr_pos = static_cast<std::size_t>(cr - begin);
      return {Step::ok, input.substr(pos + 1, cr_pos - pos - 1), cr_pos + 2};
    }
    p = cr + 1;
  }
  return {};
}

// Integers and lengths must be well formed: a CR not followed by LF, or a line too long for a
// number, means the stream is not RESP.
Line number_line(std::string_view input, std::size_t pos) {
  const std::size_t avail = input.size() - pos;
  const std::size_t window = avail < kMaxNumberLine + 1 ? avail : kMaxNumberLine + 1;
  const void* cr = std::memchr(input.data() + pos, '\r', window);
  if (cr == nullptr) return {avail > kMaxNumberLine ? Step::invalid : Step::need_more, {}, 0};
  const auto cr_pos = static_cast<std::size_t>(static_cast<const char*>(cr) - input.data());
  if (cr_pos + 1 >= input.size()) return {};
  if (input[cr_pos + 1] != '\n') return {Step::invalid, {}, 0};
  auto text = input.substr(pos + 1, cr_pos - pos - 1);
  if (!detail::parse_int64(text)) return {Step::invalid, {}, 0};
  return {Step::ok, text, cr_pos + 2};
}

// A length is -1 (null) or 0..limit; hiredis reads any negative as null, Redis only ever sends -1.
bool length_ok(std::string_view text, std::size_t limit, std::int64_t& length) {
  length = *detail::parse_int64(text);
  return length == -1 || (length >= 0 && static_cast<std::uint64_t>(length) <= limit);
}

FrameResult result(Step step) {
  return {step == Step::invalid ? FrameStatus::invalid : FrameStatus::need_more, 0};
}

}  // namespace

FrameResult frame_reply(std::string_view input, const FrameLimits& limits) {
  std::size_t pos = 0;
  std::uint64_t pending = 1;  // items still to read, counting nested ones
  while (pending > 0) {
    if (pos >= input.size()) return {};
    const char type = input[pos];
    if (type == '+' || type == '-') {
      const Line line = text_line(input, pos);
      if (line.step != Step::ok) return result(line.step);
      pos = line.next;
      --pending;
      continue;
    }
    if (type != ':' && type != '$' && type != '*') return {FrameStatus::invalid, 0};
    const Line line = number_line(input, pos);
    if (line.step != Step::ok) return result(line.step);
    pos = line.next;
    --pending;
    if (type == ':') continue;

    std::int64_t length = 0;
    const std::size_t limit = type == '$' ? limits.max_bulk_length : limits.max_elements;
    if (!length_ok(line.text, limit, length)) return {FrameStatus::invalid, 0};
    if (length == -1) continue;
    const auto count = static_cast<std::uint64_t>(length);
    if (type == '*') {
      if (count > std::numeric_limits<std::uint64_t>::max() - pending)
        return {FrameStatus::invalid, 0};
      pending += count;
      continue;
    }
    // Bulk payloads are skipped by length; the trailing CRLF is checked as soon as it arrives.
    const std::size_t avail = input.size() - pos;
    if (avail > count && input[pos + count] != '\r') return {FrameStatus::invalid, 0};
    if (avail > count + 1 && input[pos + count + 1] != '\n') return {FrameStatus::invalid, 0};
    if (avail < count + 2) return {};
    pos += count + 2;
  }
  return {FrameStatus::complete, pos};
}

}  // namespace corral::resp
