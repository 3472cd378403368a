// Longest-prefix matching over a handful of routes: a scan in length order beats a trie at the
// sizes configs have (a few to a few dozen prefixes).
#include "upstream/routes/route_table.hpp"

#include <algorithm>

namespace corral::upstream {

RouteTable::RouteTable(std::vector<KeyRoute> routes) : routes_(std::move(routes)) {
  std::stable_sort(routes_.begin(), routes_.end(), [](const KeyRoute& a, const KeyRoute& b) {
    return a.prefix.size() > b.prefix.size();
  });
}

std::string_view RouteTable::routed_part(std::string_view key) {
  if (!key.starts_with('{')) return key;
  const auto close = key.find('}', 1);
  if (close == std::string_view::npos || close == 1) return key;
  return key.substr(1, close - 1);
}

const KeyRoute* RouteTable::find(std::string_view key) const {
  const std::string_view routed = routed_part(key);
  for (const KeyRoute& route : routes_) {
    if (routed.starts_with(route.prefix)) return &route;
  }
  return nullptr;
}

}  // namespace corral::upstream
