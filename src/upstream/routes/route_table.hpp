// Which upstream a key goes to when several are configured (`routes:`): the longest route prefix
// the key starts with, the default upstream otherwise. Pure: no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace corral::upstream {

inline constexpr std::size_t kDefaultUpstream = 0;

struct KeyRoute {
  std::string prefix;
  std::size_t upstream = kDefaultUpstream;  // index into the router's upstreams
  // The upstream a copy of the route's commands goes to (kNoMirror: none).
  static constexpr std::size_t kNoMirror = static_cast<std::size_t>(-1);
  std::size_t mirror = kNoMirror;
  int mirror_reads_percent = 0;
};

class RouteTable {
 public:
  explicit RouteTable(std::vector<KeyRoute> routes);

  // The part of `key` that is routed: the text inside a leading non-empty `{...}` (so Corral's
  // companion keys `{feat:U1}:corral:lock` go where `feat:U1` goes, and a client can keep keys of
  // one route together under a tag), else the whole key.
  static std::string_view routed_part(std::string_view key);
  // The route of `key`; null: the default upstream, no mirror.
  const KeyRoute* find(std::string_view key) const;
  std::size_t upstream_of(std::string_view key) const {
    const KeyRoute* route = find(key);
    return route ? route->upstream : kDefaultUpstream;
  }
  const std::vector<KeyRoute>& routes() const { return routes_; }

 private:
  std::vector<KeyRoute> routes_;  // longest prefix first
};

}  // namespace corral::upstream
