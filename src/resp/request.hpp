// One framed client request: what the parser produced, as every layer above it sees it.
#pragma once

#include <span>
#include <string_view>

namespace corral::resp {

struct Request {
  std::span<const std::string_view> argv;  // argv[0] is the command name; never empty
  std::string_view raw;  // the exact RESP bytes received; empty for inline commands
};

}  // namespace corral::resp
