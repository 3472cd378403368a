// "-MOVED 3999 127.0.0.1:6381\r\n": the slot, then the node's address (its last colon splits the
// port off, so an IPv6 host keeps its own).
#include "upstream/cluster/redirect.hpp"

#include <charconv>

#include "upstream/cluster/cluster_links.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::upstream {

std::optional<Redirect> read_redirect(std::string_view reply) {
  constexpr std::string_view kMoved = "-MOVED ";
  constexpr std::string_view kAsk = "-ASK ";
  Redirect out;
  out.moved = reply.starts_with(kMoved);
  if (!out.moved && !reply.starts_with(kAsk)) return std::nullopt;
  std::string_view rest = reply.substr(out.moved ? kMoved.size() : kAsk.size());
  if (rest.ends_with("\r\n")) rest.remove_suffix(2);
  const auto space = rest.find(' ');
  const auto colon = rest.rfind(':');
  if (space == std::string_view::npos || colon == std::string_view::npos || colon < space)
    return std::nullopt;
  const auto slot_text = rest.substr(0, space);
  const auto port_text = rest.substr(colon + 1);
  unsigned port = 0;
  if (std::from_chars(slot_text.data(), slot_text.data() + slot_text.size(), out.slot).ec !=
          std::errc() ||
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port).ec !=
          std::errc() ||
      out.slot < 0 || out.slot >= static_cast<int>(kSlotCount) || port == 0 || port > 65535) {
    return std::nullopt;
  }
  out.to.host = std::string(rest.substr(space + 1, colon - space - 1));
  out.to.port = static_cast<std::uint16_t>(port);
  if (out.to.host.empty()) return std::nullopt;
  return out;
}

int apply_redirect(ClusterLinks& links, const Redirect& redirect) {
  auto& routes = links.routes();
  const int node = routes.find_or_add(redirect.to);
  if (redirect.moved) {
    links.counters().redirected(RedirectKind::moved);
    routes.owner[redirect.slot] = static_cast<std::int16_t>(node);
    links.request_refresh(RefreshReason::moved);
  } else {
    links.counters().redirected(RedirectKind::ask);
  }
  return node;
}

}  // namespace corral::upstream
