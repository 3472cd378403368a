// Strict decimal parsing of RESP lengths and integers, shared by the request parser and the reply
// framer and decoder, and of the integer arguments of Corral's own commands.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace corral::resp::detail {

// Redis's string2ll rules: "0", or an optional '-' then a digit 1-9 then digits; no '+', no
// leading zeros, no spaces, no overflow. Anything Redis would refuse is refused here, so a proxy
// never accepts a stream its upstream would reject (or read it differently).
inline std::optional<std::int64_t> parse_int64(std::string_view text) {
  if (text.size() == 1 && text[0] == '0') return 0;
  bool negative = false;
  std::size_t i = 0;
  if (!text.empty() && text[0] == '-') {
    negative = true;
    i = 1;
  }
  // 19 digits is the most an int64 can have; checking the count first keeps the loop simple.
  if (i >= text.size() || text.size() - i > 19 || text[i] < '1' || text[i] > '9') {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  for (; i < text.size(); ++i) {
    const unsigned digit = static_cast<unsigned char>(text[i]) - unsigned{'0'};
    if (digit > 9) return std::nullopt;
    value = value * 10 + digit;  // cannot wrap: at most 19 digits < 2^64
  }
  constexpr std::uint64_t kMaxPositive = INT64_MAX;
  if (negative) {
    if (value > kMaxPositive + 1) return std::nullopt;
    return static_cast<std::int64_t>(0 - value);
  }
  if (value > kMaxPositive) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

}  // namespace corral::resp::detail

namespace corral::resp {

// An integer argument of a command Corral answers itself, read as Redis reads it.
inline std::optional<std::int64_t> parse_integer_argument(std::string_view text) {
  return detail::parse_int64(text);
}

}  // namespace corral::resp
