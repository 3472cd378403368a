// The address registry: connects and disconnects are rare; lookups come only from the upstream
// MONITOR relay, which runs only while a client of Corral's is in MONITOR mode.
#include "upstream/own_addresses.hpp"

#include <fmt/format.h>

namespace corral::upstream {

std::string OwnAddresses::format(const boost::asio::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  if (address.is_v6()) return fmt::format("[{}]:{}", address.to_string(), endpoint.port());
  return fmt::format("{}:{}", address.to_string(), endpoint.port());
}

std::string OwnAddresses::add(const boost::asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  const auto endpoint = socket.local_endpoint(ec);
  if (ec) return {};
  std::string address = format(endpoint);
  std::lock_guard lock(mutex_);
  ++counts_[address];
  return address;
}

void OwnAddresses::remove(const std::string& address) {
  if (address.empty()) return;
  std::lock_guard lock(mutex_);
  const auto found = counts_.find(address);
  if (found != counts_.end() && --found->second <= 0) counts_.erase(found);
}

bool OwnAddresses::contains(std::string_view address) const {
  std::lock_guard lock(mutex_);
  return counts_.find(std::string(address)) != counts_.end();
}

OwnAddresses& own_addresses() {
  static auto* addresses = new OwnAddresses();  // connections may close during exit
  return *addresses;
}

}  // namespace corral::upstream
