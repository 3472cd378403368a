// The names hot-key tracking links register under in the HotCache, and fills ask for: unique per
// upstream deployment (its epoch) and, with routes, per upstream (its servers' qualifier).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace corral::stampede {

// The name a tracking link registers under, and a fill asks for: `server` of the upstream
// deployment in use while every thread's UpstreamSwitch has generation `upstream_epoch`.
inline std::string hot_link_name(std::uint64_t upstream_epoch, std::string_view server) {
  std::string name(server);
  if (upstream_epoch != 0) name += "#" + std::to_string(upstream_epoch);
  return name;
}

// How one upstream deployment's tracking links name themselves: its epoch, and with routes its
// servers' qualifier ("sessions/"), as the routed upstream names them to hot-key fills.
struct HotLinkNaming {
  std::uint64_t upstream_epoch = 0;
  std::string qualifier;
  std::string name(std::string_view server) const {
    return hot_link_name(upstream_epoch, qualifier + std::string(server));
  }
};

}  // namespace corral::stampede
