// Each node's connection reconnects by itself: a node that comes back is polled again without
// the poller noticing it left.
#include "upstream/offset_probe.hpp"

#include <algorithm>
#include <string_view>

#include "config/values.hpp"
#include "upstream/call.hpp"
#include "upstream/connection.hpp"
#include "upstream/replication_info.hpp"

namespace corral::upstream {

using boost::asio::awaitable;

namespace {
constexpr std::string_view kInfoReplication[] = {"INFO", "replication"};
}  // namespace

std::shared_ptr<Connection> OffsetProbe::node(const config::Endpoint& address) {
  auto& connection = nodes_[config::format_endpoint(address)];
  if (!connection) {
    connection = std::make_shared<Connection>(
        executor_, node_connection_options(settings_, address, true), nullptr);
    connection->start();
  }
  return connection;
}

awaitable<std::optional<std::uint64_t>> OffsetProbe::primary_offset(
    const config::Endpoint& primary) {
  // Held while the answer is awaited: keep_only() may drop it from the map meanwhile.
  const auto connection = node(primary);
  const auto answer = co_await call(*connection, kInfoReplication);
  if (!answer.ok()) co_return std::nullopt;
  co_return info_number(answer.reply, "master_repl_offset");
}

awaitable<std::optional<std::uint64_t>> OffsetProbe::replica_offset(
    const config::Endpoint& replica) {
  const auto connection = node(replica);
  const auto answer = co_await call(*connection, kInfoReplication);
  if (!answer.ok() || !info_link_up(answer.reply)) co_return std::nullopt;
  co_return info_number(answer.reply, "slave_repl_offset");
}

void OffsetProbe::keep_only(const std::vector<std::string>& kept) {
  std::erase_if(nodes_, [&kept](auto& entry) {
    if (std::find(kept.begin(), kept.end(), entry.first) != kept.end()) return false;
    entry.second->close();
    return true;
  });
}

void OffsetProbe::close() {
  for (auto& [address, connection] : nodes_) connection->close();
  nodes_.clear();
}

}  // namespace corral::upstream
