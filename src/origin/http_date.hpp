// HTTP-date (RFC 9110 section 5.6.7) as Expires, Date and Last-Modified carry it: the preferred
// IMF-fixdate and the two obsolete forms every recipient must still accept. Pure.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace corral::origin {

// "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT" (two-digit years read as
// the nearest century, RFC 9110's rule simplified to 19xx for >= 70) or asctime's
// "Sun Nov  6 08:49:37 1994". nullopt for anything else, including impossible dates.
std::optional<std::chrono::sys_seconds> parse_http_date(std::string_view text);

}  // namespace corral::origin
