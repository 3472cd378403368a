// How hot-key fills reach the upstream (hot_keys.cache): the server holding a key, a connection of
// their own to it, and the routed path for a fill that server turned away.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "upstream/reply_target.hpp"

namespace corral::upstream {
class Link;
}

namespace corral::stampede {

struct HotFillRoutes {
  // The server of `key` ("" for a single Redis, "host:port" of a cluster node); nullopt while no
  // server serves it.
  std::function<std::optional<std::string>(std::string_view key)> server_of;
  // The partition of `key` (a cluster's slot; the same for every key of a single Redis).
  std::function<int(std::string_view key)> partition_of;
  // A new connection to `server`, in the cache's database (started, not reconnecting); null when
  // none can be opened.
  std::function<std::shared_ptr<upstream::Link>(const std::string& server)> connect;
  // GET `key` on the upstream's routed path, which absorbs MOVED, ASK and a failover; the outcome
  // never arrives from within the call.
  std::function<void(std::string_view key, std::shared_ptr<upstream::ReplyTarget> target)> reroute;
  // The generation of the upstream in use (a reload that replaces it counts one more): fill
  // connections opened before it changed belong to the previous upstream, and its tracking
  // links are named by it (hot_link_name()). Optional: 0 when absent.
  std::function<std::uint64_t()> upstream_epoch;

  explicit operator bool() const { return server_of && partition_of && connect && reroute; }
};

}  // namespace corral::stampede
