// RESP2 request framing, multibulk and inline, following Redis's networking.c
// (processMultibulkBuffer, processInlineBuffer) and sds.c (sdssplitargs) so that Corral accepts and
// refuses what Redis does.
#include "resp/request_parser.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>

#include "resp/int_parse.hpp"

namespace corral::resp {
namespace {

constexpr std::string_view kInvalidMultibulkLength = "Protocol error: invalid multibulk length";
constexpr std::string_view kInvalidBulkLength = "Protocol error: invalid bulk length";
constexpr std::string_view kResp3Request = "Protocol error: RESP3 types are not requests";
constexpr std::string_view kTooBigInline = "Protocol error: too big inline request";
constexpr std::string_view kUnbalancedQuotes = "Protocol error: unbalanced quotes in request";
constexpr std::string_view kTooManyInlineArgs =
    "Protocol error: too many arguments in inline request";
constexpr std::string_view kTooBigMbulkCount = "Protocol error: too big mbulk count string";
constexpr std::string_view kTooBigBulkCount = "Protocol error: too big bulk count string";
constexpr std::string_view kExpectedDollar = "Protocol error: expected '$'";
constexpr std::string_view kExpectedDollarGot = "Protocol error: expected '$', got '";

// argv grows past this by doubling; reserving the wire count itself would let a 20-byte header
// allocate max_elements slots.
constexpr std::size_t kArgvReserveCap = 256;

// Redis's "expected '$', got 'X'" for every printable X, built at compile time so that the error
// stays a static string_view as the contract requires.
struct ExpectedDollarTable {
  static constexpr char kFirst = '!';
  static constexpr char kLast = '~';
  static constexpr std::size_t kLength = kExpectedDollarGot.size() + 2;
  std::array<std::array<char, kLength>, kLast - kFirst + 1> text{};

  constexpr ExpectedDollarTable() {
    for (std::size_t c = 0; c < text.size(); ++c) {
      for (std::size_t i = 0; i < kExpectedDollarGot.size(); ++i)
        text[c][i] = kExpectedDollarGot[i];
      text[c][kLength - 2] = static_cast<char>(kFirst + c);
      text[c][kLength - 1] = '\'';
    }
  }
};
constexpr ExpectedDollarTable kExpectedDollarTable;

std::string_view expected_dollar(char got) {
  // Redis prints control bytes raw (and sanitizes CR/LF later); the generic text is clearer.
  if (got < ExpectedDollarTable::kFirst || got > ExpectedDollarTable::kLast) return kExpectedDollar;
  const auto& text = kExpectedDollarTable.text[got - ExpectedDollarTable::kFirst];
  return {text.data(), text.size()};
}

ParseResult fail(ParseStatus status, std::string_view error) { return {status, 0, false, error}; }
ParseResult need_more() { return {}; }

enum class LineStatus { ok, need_more, too_long, bad_terminator };

struct HeaderLine {
  LineStatus status = LineStatus::need_more;
  std::string_view number;  // between the type byte and "\r\n"
  std::size_t next = 0;     // position after "\r\n"
};

// The header line starting at `pos` (its type byte) may hold at most `max_length` bytes before its
// CR. The scan is bounded so that re-parsing a stalled stream stays cheap, and a prefix of any
// input gives need_more or the same answer as the whole input.
HeaderLine find_header_line(std::string_view input, std::size_t pos, std::size_t max_length) {
  const std::size_t avail = input.size() - pos;
  const std::size_t window = std::min(avail, max_length + 1);
  const void* cr = std::memchr(input.data() + pos, '\r', window);
  if (cr == nullptr) {
    return {avail > max_length ? LineStatus::too_long : LineStatus::need_more, {}, 0};
  }
  const std::size_t cr_pos = static_cast<std::size_t>(static_cast<const char*>(cr) - input.data());
  if (cr_pos + 1 >= input.size()) return {};
  // Redis skips whatever byte follows the CR; a stray byte here means a desynchronised stream.
  if (input[cr_pos + 1] != '\n') return {LineStatus::bad_terminator, {}, 0};
  return {LineStatus::ok, input.substr(pos + 1, cr_pos - pos - 1), cr_pos + 2};
}

// The common header "<type><digits>\r\n" (a digit 1-9 first, at most 18 digits) read in one
// pass, digits parsed while they are scanned. Whatever else (a sign, "0", a leading zero, a short
// read, a long line) is left to find_header_line and parse_int64, which give Redis's exact
// answers; so this only ever agrees with them, sooner.
struct PlainLength {
  bool ok = false;
  std::uint64_t value = 0;
  std::size_t next = 0;  // after "\r\n"
};

PlainLength read_plain_length(std::string_view input, std::size_t pos, std::size_t max_length) {
  constexpr std::size_t kMaxDigits = 18;  // below 2^63: no overflow check needed
  std::size_t i = pos + 1;
  if (i >= input.size() || input[i] < '1' || input[i] > '9') return {};
  const std::size_t limit = std::min({input.size(), i + kMaxDigits, pos + max_length});
  std::uint64_t value = 0;
  for (; i < limit; ++i) {
    const unsigned digit = static_cast<unsigned char>(input[i]) - unsigned{'0'};
    if (digit > 9) break;
    value = value * 10 + digit;
  }
  if (i + 1 >= input.size() || input[i] != '\r' || input[i + 1] != '\n') return {};
  return {true, value, i + 2};
}

// Reads one "$len\r\n<data>\r\n" at `pos`; on success appends the data and returns the position
// after it, otherwise returns 0 with `result` set.
std::size_t read_bulk(std::string_view input, std::size_t pos, const RequestLimits& limits,
                      std::vector<std::string_view>& argv, ParseResult& result) {
  if (pos >= input.size()) return 0;
  if (input[pos] != '$') {
    result = fail(ParseStatus::invalid, expected_dollar(input[pos]));
    return 0;
  }
  std::uint64_t size = 0;
  std::size_t data = 0;
  if (const PlainLength plain = read_plain_length(input, pos, limits.max_inline_length); plain.ok) {
    size = plain.value;
    data = plain.next;
  } else {
    const HeaderLine line = find_header_line(input, pos, limits.max_inline_length);
    switch (line.status) {
      case LineStatus::ok:
        break;
      case LineStatus::need_more:
        return 0;
      case LineStatus::too_long:
        result = fail(ParseStatus::too_large, kTooBigBulkCount);
        return 0;
      case LineStatus::bad_terminator:
        result = fail(ParseStatus::invalid, kInvalidBulkLength);
        return 0;
    }
    const auto length = detail::parse_int64(line.number);
    if (!length || *length < 0) {
      result = fail(ParseStatus::invalid, kInvalidBulkLength);
      return 0;
    }
    size = static_cast<std::uint64_t>(*length);
    data = line.next;
  }
  if (size > limits.max_bulk_length) {
    result = fail(ParseStatus::too_large, kInvalidBulkLength);
    return 0;
  }
  // The payload is skipped by length, never scanned; only its two trailing bytes are checked, and
  // as soon as they arrive so that a wrong length fails early.
  const std::size_t avail = input.size() - data;
  const bool bad_cr = avail > size && input[data + size] != '\r';
  const bool bad_lf = avail > size + 1 && input[data + size + 1] != '\n';
  if (bad_cr || bad_lf) {
    result = fail(ParseStatus::invalid, kInvalidBulkLength);
    return 0;
  }
  if (avail < size + 2) return 0;
  argv.emplace_back(input.data() + data, size);
  return data + size + 2;
}

ParseResult parse_multibulk(std::string_view input, const RequestLimits& limits,
                            std::vector<std::string_view>& argv) {
  std::int64_t count = 0;
  std::size_t pos = 0;
  if (const PlainLength plain = read_plain_length(input, 0, limits.max_inline_length); plain.ok) {
    count = static_cast<std::int64_t>(plain.value);
    pos = plain.next;
  } else {
    const HeaderLine header = find_header_line(input, 0, limits.max_inline_length);
    switch (header.status) {
      case LineStatus::ok:
        break;
      case LineStatus::need_more:
        return need_more();
      case LineStatus::too_long:
        return fail(ParseStatus::too_large, kTooBigMbulkCount);
      case LineStatus::bad_terminator:
        return fail(ParseStatus::invalid, kInvalidMultibulkLength);
    }
    const auto parsed = detail::parse_int64(header.number);
    if (!parsed) return fail(ParseStatus::invalid, kInvalidMultibulkLength);
    count = *parsed;
    pos = header.next;
  }
  // Redis treats *0 and any negative count as an empty request that is simply skipped.
  if (count <= 0) return {ParseStatus::ok, pos, false, {}};
  if (static_cast<std::uint64_t>(count) > limits.max_elements) {
    return fail(ParseStatus::too_large, kInvalidMultibulkLength);
  }
  argv.reserve(std::min(static_cast<std::size_t>(count), kArgvReserveCap));
  for (std::int64_t i = 0; i < count; ++i) {
    ParseResult result;
    pos = read_bulk(input, pos, limits, argv, result);
    if (pos == 0) return result;
  }
  return {ParseStatus::ok, pos, false, {}};
}

// sdssplitargs skips isspace() between arguments but ends a bare argument on these four only.
bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool ends_bare_token(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
int hex_value(char c) {
  if (c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}
char unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;
  }
}

constexpr std::size_t kUnbalanced = std::string_view::npos;

// A closing quote must end the argument: Redis refuses `"foo"bar` as unbalanced.
std::size_t after_closing_quote(std::string_view line, std::size_t p) {
  return p == line.size() || is_blank(line[p]) ? p : kUnbalanced;
}

std::size_t read_double_quoted(std::string_view line, std::size_t p, std::string& out) {
  while (p < line.size()) {
    const char c = line[p];
    if (c == '"') return after_closing_quote(line, p + 1);
    if (c == '\\' && p + 3 < line.size() && line[p + 1] == 'x' && is_hex(line[p + 2]) &&
        is_hex(line[p + 3])) {
      out.push_back(static_cast<char>(hex_value(line[p + 2]) * 16 + hex_value(line[p + 3])));
      p += 4;
    } else if (c == '\\' && p + 1 < line.size()) {
      out.push_back(unescape(line[p + 1]));
      p += 2;
    } else {
      out.push_back(c);
      ++p;
    }
  }
  return kUnbalanced;
}

std::size_t read_single_quoted(std::string_view line, std::size_t p, std::string& out) {
  while (p < line.size()) {
    const char c = line[p];
    if (c == '\\' && p + 1 < line.size() && line[p + 1] == '\'') {
      out.push_back('\'');
      p += 2;
    } else if (c == '\'') {
      return after_closing_quote(line, p + 1);
    } else {
      out.push_back(c);
      ++p;
    }
  }
  return kUnbalanced;
}

// One argument starting at a non-blank byte; a quote may open mid-argument (`ab"c d"` is "abc d").
std::size_t read_token(std::string_view line, std::size_t p, std::string& out) {
  while (p < line.size()) {
    const char c = line[p];
    if (ends_bare_token(c)) return p + 1;
    if (c == '"') return read_double_quoted(line, p + 1, out);
    if (c == '\'') return read_single_quoted(line, p + 1, out);
    out.push_back(c);
    ++p;
  }
  return p;
}

std::size_t skip_blanks(std::string_view line, std::size_t p) {
  while (p < line.size() && is_blank(line[p])) ++p;
  return p;
}

// Without quotes every argument is a slice of the input: the common telnet case copies nothing.
void split_bare(std::string_view line, std::vector<std::string_view>& argv) {
  std::size_t p = skip_blanks(line, 0);
  while (p < line.size()) {
    const std::size_t start = p;
    while (p < line.size() && !ends_bare_token(line[p])) ++p;
    argv.push_back(line.substr(start, p - start));
    p = skip_blanks(line, p);
  }
}

bool split_quoted(std::string_view line, std::vector<std::string_view>& argv,
                  std::string& scratch) {
  // Unescaping never lengthens an argument, so the line's size is enough and scratch never
  // reallocates under the slices already handed out.
  scratch.clear();
  scratch.reserve(line.size());
  [[maybe_unused]] const char* const base = scratch.data();
  std::size_t p = skip_blanks(line, 0);
  while (p < line.size()) {
    const std::size_t start = scratch.size();
    p = read_token(line, p, scratch);
    if (p == kUnbalanced) return false;
    argv.emplace_back(scratch.data() + start, scratch.size() - start);
    p = skip_blanks(line, p);
  }
  assert(scratch.data() == base);
  return true;
}

ParseResult parse_inline(std::string_view input, const RequestLimits& limits,
                         std::vector<std::string_view>& argv, std::string& scratch) {
  const std::size_t window = std::min(input.size(), limits.max_inline_length + 1);
  const void* lf = std::memchr(input.data(), '\n', window);
  if (lf == nullptr) {
    if (input.size() > limits.max_inline_length) {
      return {ParseStatus::too_large, 0, true, kTooBigInline};
    }
    return need_more();
  }
  // Like Redis, a bare LF ends the line too (netcat and some scripts send no CR).
  const std::size_t lf_pos = static_cast<std::size_t>(static_cast<const char*>(lf) - input.data());
  std::size_t line_size = lf_pos;
  if (line_size > 0 && input[line_size - 1] == '\r') --line_size;
  const std::string_view line = input.substr(0, line_size);

  const bool quoted = line.find_first_of("\"'") != std::string_view::npos;
  if (!quoted) {
    split_bare(line, argv);
  } else if (!split_quoted(line, argv, scratch)) {
    return {ParseStatus::invalid, 0, true, kUnbalancedQuotes};
  }
  // The line length bounds memory already; the count keeps one rule for both forms (before AUTH:
  // at most 10 arguments however they are written).
  if (argv.size() > limits.max_elements) {
    argv.clear();
    return {ParseStatus::too_large, 0, true, kTooManyInlineArgs};
  }
  return {ParseStatus::ok, lf_pos + 1, true, {}};
}

}  // namespace

ParseResult parse_request(std::string_view input, const RequestLimits& limits,
                          std::vector<std::string_view>& argv, std::string& scratch) {
  argv.clear();
  if (input.empty()) return need_more();
  // Requests are RESP2 arrays or inline lines in either protocol. A RESP3 type byte first means a
  // confused client (Redis would run it as an inline command named "%1"): refuse it outright.
  if (std::string_view("%~|>_#,(=!").find(input[0]) != std::string_view::npos) {
    return {ParseStatus::invalid, 0, false, kResp3Request};
  }
  ParseResult result = input[0] == '*' ? parse_multibulk(input, limits, argv)
                                       : parse_inline(input, limits, argv, scratch);
  if (result.status != ParseStatus::ok) argv.clear();
  return result;
}

}  // namespace corral::resp
