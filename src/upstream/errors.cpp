// Classifying a server's error reply by its code (the first word), once.
#include "upstream/errors.hpp"

#include <array>
#include <utility>

namespace corral::upstream {

ErrorKind classify_error_reply(std::string_view reply) {
  if (!reply.empty() && (reply.front() == '-' || reply.front() == '!')) reply.remove_prefix(1);
  const std::string_view code = reply.substr(0, reply.find_first_of(" \r"));
  static constexpr std::array<std::pair<std::string_view, ErrorKind>, 6> kCodes{{
      {"MOVED", ErrorKind::moved},
      {"ASK", ErrorKind::ask},
      {"TRYAGAIN", ErrorKind::tryagain},
      {"CLUSTERDOWN", ErrorKind::clusterdown},
      {"BUSY", ErrorKind::busy},
      {"NOTBUSY", ErrorKind::notbusy},
  }};
  for (const auto& [name, kind] : kCodes) {
    if (code == name) return kind;
  }
  return ErrorKind::server;
}

}  // namespace corral::upstream
