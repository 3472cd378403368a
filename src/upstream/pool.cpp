// Shared and dedicated upstream connections of one io thread.
#include "upstream/pool.hpp"

#include <algorithm>
#include <cassert>

namespace corral::upstream {

Pool::Pool(const boost::asio::any_io_executor& executor, const config::UpstreamSettings& settings,
           metrics::ThreadStats* stats, std::atomic<int>* ready_connections)
    : executor_(executor),
      settings_(settings),
      stats_(stats),
      ready_connections_(ready_connections) {
  assert(!settings_.servers.empty());
}

Pool::~Pool() { close(); }

void Pool::start() { shared(settings_.database); }

void Pool::close() {
  for (auto& [database, connections] : shared_) {
    for (auto& connection : connections) connection->close();
  }
  shared_.clear();
}

ConnectionOptions Pool::options_for(int database, bool reconnect) const {
  return connection_options(settings_, database, reconnect);
}

Connection& Pool::shared(int database, std::size_t affinity) {
  auto& connections = shared_[database];
  if (connections.empty()) {
    const int count = std::max(1, settings_.connections_per_thread);
    for (int i = 0; i < count; ++i) {
      // Only the default database's connections count for readiness.
      auto* ready = database == settings_.database ? ready_connections_ : nullptr;
      auto connection =
          std::make_shared<Connection>(executor_, options_for(database, true), stats_, ready);
      connection->start();
      connections.push_back(std::move(connection));
    }
  }
  return *connections[affinity % connections.size()];
}

std::shared_ptr<Connection> Pool::dedicated(int database) {
  auto connection =
      std::make_shared<Connection>(executor_, options_for(database, false), stats_, nullptr);
  connection->start();
  return connection;
}

}  // namespace corral::upstream
