// SENTINEL REPLICAS' replies are arrays of field/value pairs; INFO's are "name:value" lines.
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

std::optional<std::string_view> info_field(std::string_view text, std::string_view name) {
  std::size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    auto line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':') {
      return line.substr(name.size() + 1);
    }
    at = end + 1;
  }
  return std::nullopt;
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

std::optional<std::uint64_t> info_number(std::string_view reply, std::string_view name) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != resp::Reply::Type::bulk) return std::nullopt;
  const auto value = info_field(decoded->text, name);
  if (!value) return std::nullopt;
  std::uint64_t number = 0;
  const auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), number);
  if (ec != std::errc{} || end != value->data() + value->size()) return std::nullopt;
  return number;
}

bool info_link_up(std::string_view reply) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != resp::Reply::Type::bulk) return false;
  return info_field(decoded->text, "master_link_status") == std::string_view("up");
}

}  // namespace corral::upstream
