// INFO's replies are "name:value" lines in one bulk string.
#include "upstream/replication_info.hpp"

#include <charconv>

#include "resp/reply.hpp"

namespace corral::upstream {

namespace {
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

bool within_replica_lag(std::optional<std::uint64_t> primary_offset, std::uint64_t replica_offset,
                        std::uint64_t max_lag) {
  if (max_lag == 0) return true;
  if (!primary_offset) return false;
  return *primary_offset <= replica_offset || *primary_offset - replica_offset <= max_lag;
}

}  // namespace corral::upstream
