// Finds the end of one RESP2 or RESP3 reply without recursion or allocation: a single counter of
// items still to read replaces the parser stack, so nesting depth costs nothing and cannot overflow
// anything. Only streamed aggregates (`*?` ... `.`), which Redis never sends, need a small stack.
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
// "%.17g" of any double fits in 24 characters; a little slack for other servers' spellings.
constexpr std::size_t kMaxDoubleLine = 64;
// Streamed aggregates nested in streamed aggregates: a fixed stack, so garbage cannot grow one.
constexpr std::size_t kMaxStreamedDepth = 32;

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

constexpr FrameResult kInvalid{FrameStatus::invalid, 0};

bool is_double(std::string_view text) {
  if (text.empty() || text.size() > kMaxDoubleLine) return false;
  if (text == "inf" || text == "-inf" || text == "nan" || text == "-nan") return true;
  bool digit = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E') {
      return false;
    }
  }
  return digit;
}

// Lines whose content is checked as a whole: null, boolean, double. A big number is not: Redis
// sends a script's `big_number` as the script wrote it (CR and LF made spaces), digits or not.
bool line_ok(char type, std::string_view text) {
  switch (type) {
    case '_':
      return text.empty();
    case '#':
      return text == "t" || text == "f";
    case ',':
      return is_double(text);
    default:
      return true;  // simple string, error
  }
}

// Skips `count` payload bytes and the CRLF after them, checking the CRLF as soon as it arrives.
Step skip_payload(std::string_view input, std::size_t& pos, std::size_t count) {
  const std::size_t avail = input.size() - pos;
  if (avail > count && input[pos + count] != '\r') return Step::invalid;
  if (avail > count + 1 && input[pos + count + 1] != '\n') return Step::invalid;
  if (avail < count + 2) return Step::need_more;
  pos += count + 2;
  return Step::ok;
}

// `$?`: chunks ";<len>\r\n<bytes>\r\n" until ";0\r\n".
Step skip_streamed_string(std::string_view input, std::size_t& pos, const FrameLimits& limits) {
  for (;;) {
    if (pos >= input.size()) return Step::need_more;
    if (input[pos] != ';') return Step::invalid;
    const Line line = number_line(input, pos);
    if (line.step != Step::ok) return line.step;
    std::int64_t length = 0;
    if (!length_ok(line.text, limits.max_bulk_length, length) || length < 0) return Step::invalid;
    pos = line.next;
    if (length == 0) return Step::ok;
    if (const Step step = skip_payload(input, pos, static_cast<std::size_t>(length));
        step != Step::ok) {
      return step;
    }
  }
}

// Items an aggregate header announces: maps and attributes hold pairs, and an attribute is
// followed by the reply it annotates (framed as one with it).
std::uint64_t items_of(char type, std::uint64_t count) {
  if (type == '%') return count * 2;
  if (type == '|') return count * 2 + 1;
  return count;
}

bool is_aggregate(char type) {
  return type == '*' || type == '%' || type == '~' || type == '>' || type == '|';
}

bool is_bulk(char type) { return type == '$' || type == '!' || type == '='; }

}  // namespace

FrameResult frame_reply(std::string_view input, const FrameLimits& limits) {
  std::size_t pos = 0;
  std::uint64_t pending = 1;  // items still to read, counting nested ones
  // Open streamed aggregates: the `pending` of the enclosing level, restored at their `.`.
  std::uint64_t streamed[kMaxStreamedDepth];
  // For a streamed map: whether an odd number of items has been read (a key without its value).
  bool half_pair[kMaxStreamedDepth];
  bool is_map[kMaxStreamedDepth];
  std::size_t open = 0;
  while (pending > 0 || open > 0) {
    if (pos >= input.size()) return {};
    const char type = input[pos];
    if (pending == 0) {
      // Inside a streamed aggregate, between items: its end, or one more item.
      if (type == '.') {
        const Line line = text_line(input, pos);
        if (line.step != Step::ok) return result(line.step);
        if (!line.text.empty() || half_pair[open - 1]) return kInvalid;
        pos = line.next;
        pending = streamed[--open];
        continue;
      }
      half_pair[open - 1] = is_map[open - 1] && !half_pair[open - 1];
      pending = 1;
    }
    if (type == '+' || type == '-' || type == '_' || type == '#' || type == ',' || type == '(') {
      const Line line = text_line(input, pos);
      if (line.step != Step::ok) return result(line.step);
      if (!line_ok(type, line.text)) return kInvalid;
      pos = line.next;
      --pending;
      continue;
    }
    if (type != ':' && !is_bulk(type) && !is_aggregate(type)) return kInvalid;
    if ((type == '$' || (is_aggregate(type) && type != '|')) && input.size() - pos >= 2 &&
        input[pos + 1] == '?') {
      if (input.size() - pos < 4) return {};
      if (input[pos + 2] != '\r' || input[pos + 3] != '\n') return kInvalid;
      pos += 4;
      --pending;
      if (type == '$') {
        if (const Step step = skip_streamed_string(input, pos, limits); step != Step::ok) {
          return result(step);
        }
        continue;
      }
      if (open == kMaxStreamedDepth) return kInvalid;
      half_pair[open] = false;
      is_map[open] = type == '%';
      streamed[open++] = pending;
      pending = 0;
      continue;
    }
    const Line line = number_line(input, pos);
    if (line.step != Step::ok) return result(line.step);
    pos = line.next;
    --pending;
    if (type == ':') continue;

    std::int64_t length = 0;
    const std::size_t limit = is_bulk(type) ? limits.max_bulk_length : limits.max_elements;
    if (!length_ok(line.text, limit, length)) return kInvalid;
    // Only RESP2's bulk and array have a -1 null; RESP3 has `_` for that.
    if (length == -1) {
      if (type != '$' && type != '*') return kInvalid;
      continue;
    }
    const auto count = static_cast<std::uint64_t>(length);
    if (is_aggregate(type)) {
      // A map's pairs count against the element limit as two items each.
      if ((type == '%' || type == '|') && count > limit / 2) return kInvalid;
      const std::uint64_t items = items_of(type, count);
      if (items > std::numeric_limits<std::uint64_t>::max() - pending) return kInvalid;
      pending += items;
      continue;
    }
    // Verbatim strings start with a three-letter format and a colon ("txt:").
    if (type == '=' && (count < 4 || (input.size() - pos > 3 && input[pos + 3] != ':'))) {
      return kInvalid;
    }
    if (const Step step = skip_payload(input, pos, count); step != Step::ok) return result(step);
  }
  return {FrameStatus::complete, pos};
}

}  // namespace corral::resp
