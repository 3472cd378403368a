// Fixed RESP2 replies that Corral writes or compares against, named once.
#pragma once

#include <string_view>

namespace corral::resp {

inline constexpr std::string_view kReplyOk = "+OK\r\n";
inline constexpr std::string_view kReplyPong = "+PONG\r\n";
inline constexpr std::string_view kReplyZero = ":0\r\n";
inline constexpr std::string_view kReplyOne = ":1\r\n";
inline constexpr std::string_view kReplyNullBulk = "$-1\r\n";
inline constexpr std::string_view kReplyEmptyArray = "*0\r\n";

}  // namespace corral::resp
