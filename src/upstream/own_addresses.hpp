// The local addresses of Corral's connections to its upstreams, as Redis names their clients
// ("127.0.0.1:51234"): what tells, in the upstream's MONITOR, the commands of Corral's own
// connections from other clients' (proxy/local/script_monitor.hpp).
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <boost/asio/ip/tcp.hpp>

namespace corral::upstream {

class OwnAddresses {
 public:
  // Called once per connected socket and once when it goes: a lock, never per command.
  // Returns the address added ("" when the socket has none), to be passed to remove().
  std::string add(const boost::asio::ip::tcp::socket& socket);
  void remove(const std::string& address);
  bool contains(std::string_view address) const;

  // Redis's anetFormatAddr: "ip:port", IPv6 as "[ip]:port".
  static std::string format(const boost::asio::ip::tcp::endpoint& endpoint);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, int> counts_;  // a port reused before its old socket went
};

// The process's.
OwnAddresses& own_addresses();

}  // namespace corral::upstream
