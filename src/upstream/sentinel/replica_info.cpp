// SENTINEL REPLICAS' replies are arrays of field/value pairs.
#include "upstream/sentinel/replica_info.hpp"

#include <charconv>
#include <string>

#include "resp/reply.hpp"

namespace corral::upstream {

namespace {
// A flag that makes a replica useless for reads (Sentinel's words).
bool flagged_down(std::string_view flags) {
  for (const std::string_view bad : {"s_down", "o_down", "disconnected"}) {
    if (flags.find(bad) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

std::vector<config::Endpoint> parse_sentinel_replicas(std::string_view reply) {
  std::vector<config::Endpoint> up;
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != resp::Reply::Type::array) return up;
  for (const auto& replica : decoded->elements) {
    std::string_view ip, port, flags;
    for (std::size_t i = 0; i + 1 < replica.elements.size(); i += 2) {
      const auto& field = replica.elements[i].text;
      const auto& value = replica.elements[i + 1].text;
      if (field == "ip") ip = value;
      if (field == "port") port = value;
      if (field == "flags") flags = value;
    }
    int number = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (ip.empty() || ec != std::errc{} || end != port.data() + port.size() || number <= 0 ||
        number > 65535 || flagged_down(flags)) {
      continue;
    }
    up.push_back({std::string(ip), static_cast<std::uint16_t>(number)});
  }
  return up;
}

}  // namespace corral::upstream
