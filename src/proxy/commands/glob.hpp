// Redis's glob patterns (KEYS, SCAN MATCH, COMMAND LIST FILTERBY PATTERN): * ? [abc] [^a-z] \x.
#pragma once

#include <string_view>

namespace corral::proxy {

// True when `pattern` matches all of `text`, as Redis's stringmatchlen does.
bool glob_match(std::string_view pattern, std::string_view text, bool nocase);

}  // namespace corral::proxy
