// RESP2 encoding into a caller-owned buffer: one append per header, integers via std::to_chars.
#include "resp/encoder.hpp"

#include <array>
#include <charconv>

namespace corral::resp {
namespace {

// Type byte, up to 20 digits and a sign, CRLF.
using HeaderBuffer = std::array<char, 24>;

template <typename Integer>
std::string_view format_header(HeaderBuffer& buffer, char type, Integer value) {
  buffer[0] = type;
  char* end = std::to_chars(buffer.data() + 1, buffer.data() + buffer.size() - 2, value).ptr;
  *end++ = '\r';
  *end++ = '\n';
  return {buffer.data(), static_cast<std::size_t>(end - buffer.data())};
}

std::size_t decimal_digits(std::size_t value) {
  std::size_t digits = 1;
  for (; value >= 10; value /= 10) ++digits;
  return digits;
}

void append_line(std::string& out, char type, std::string_view text) {
  out.reserve(out.size() + text.size() + 3);
  out.push_back(type);
  out.append(text);
  out.append("\r\n", 2);
}

}  // namespace

void append_simple(std::string& out, std::string_view text) { append_line(out, '+', text); }

void append_error(std::string& out, std::string_view message) { append_line(out, '-', message); }

void append_integer(std::string& out, std::int64_t value) {
  HeaderBuffer buffer;
  out.append(format_header(buffer, ':', value));
}

void append_bulk(std::string& out, std::string_view value) {
  HeaderBuffer buffer;
  const std::string_view header = format_header(buffer, '$', value.size());
  out.reserve(out.size() + header.size() + value.size() + 2);
  out.append(header);
  out.append(value);
  out.append("\r\n", 2);
}

void append_text(std::string& out, std::string_view text, int protocol) {
  if (protocol != 3) return append_bulk(out, text);
  constexpr std::string_view kFormat = "txt:";
  HeaderBuffer buffer;
  const std::string_view header = format_header(buffer, '=', kFormat.size() + text.size());
  out.reserve(out.size() + header.size() + kFormat.size() + text.size() + 2);
  out.append(header);
  out.append(kFormat);
  out.append(text);
  out.append("\r\n", 2);
}

void append_null(std::string& out) { out.append("$-1\r\n", 5); }

void append_null_array(std::string& out) { out.append("*-1\r\n", 5); }

void append_array_header(std::string& out, std::size_t count) {
  HeaderBuffer buffer;
  out.append(format_header(buffer, '*', count));
}

void append_header(std::string& out, char type, std::size_t count) {
  HeaderBuffer buffer;
  out.append(format_header(buffer, type, count));
}

void append_command(std::string& out, std::span<const std::string_view> argv) {
  // One reservation for the whole command: "$<len>\r\n<arg>\r\n" is 5 bytes plus digits plus data.
  std::size_t total = 3 + decimal_digits(argv.size());
  for (const std::string_view arg : argv) total += 5 + decimal_digits(arg.size()) + arg.size();
  out.reserve(out.size() + total);
  append_array_header(out, argv.size());
  for (const std::string_view arg : argv) append_bulk(out, arg);
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  append_bulk(out, name);
  append_bulk(out, value);
}

void append_field(std::string& out, std::string_view name, std::int64_t value) {
  append_bulk(out, name);
  append_integer(out, value);
}

}  // namespace corral::resp
