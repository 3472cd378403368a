// One framed client request as the dispatcher sees it.
#pragma once

#include <span>
#include <string_view>

namespace corral::proxy {

struct Request {
  std::span<const std::string_view> argv;  // argv[0] is the command name; never empty
  std::string_view raw;  // the exact RESP bytes received; empty for inline commands
};

}  // namespace corral::proxy
