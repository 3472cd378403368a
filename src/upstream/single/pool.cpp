// Shared and dedicated upstream connections of one io thread.
#include "upstream/single/pool.hpp"

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

#include "resp/encoder.hpp"
#include "upstream/server_version.hpp"

namespace corral::upstream {

Pool::Pool(const boost::asio::any_io_executor& executor, const config::UpstreamSettings& settings,
           metrics::ThreadStats* stats, std::atomic<int>* ready_connections,
           std::optional<UserLogin> user)
    : executor_(executor),
      settings_(settings),
      stats_(stats),
      ready_connections_(ready_connections),
      user_(std::move(user)) {
  assert(!settings_.servers.empty());
}

Pool::~Pool() { close(); }

void Pool::start() {
  // HELLO without a version changes nothing on the connection and names the server's version,
  // which Corral's own HELLO reports to clients (a server before Redis 6.2 refuses it: ignored).
  static const std::string hello = [] {
    std::string command;
    const std::string_view argv[] = {"HELLO"};
    resp::append_command(command, argv);
    return command;
  }();
  spare_[{settings_.database, 2}] = open_dedicated(settings_.database, 2);
  shared(settings_.database)
      .send(hello, CallbackTarget::make([](std::string_view reply, bool failed) {
              if (!failed) note_hello_reply(reply);
            }),
            0);
}

void Pool::close() {
  for (auto& [key, connections] : shared_) {
    for (auto& connection : connections) connection->close();
  }
  shared_.clear();
  const auto close_all = [](auto& links) {
    for (auto& [key, link] : links) {
      if (link) link->close();
    }
    links.clear();
  };
  close_all(spare_);
  close_all(returned_);
}

bool Pool::refused() const {
  for (const auto& [key, connections] : shared_) {
    for (const auto& connection : connections) {
      if (!connection->refusal().empty()) return true;
    }
  }
  return false;
}

ConnectionOptions Pool::options_for(int database, bool reconnect, int protocol) const {
  auto options = connection_options(settings_, database, reconnect);
  options.protocol = protocol;
  if (user_ && database != 0 && database == user_->entered_database) {
    options.user_after_select = user_->user;
    options.user_password_after_select = user_->password;
  } else if (user_) {
    options.username = user_->user;  // then SELECT is the user's, and refused as Redis would
    options.password = user_->password;
  }
  return options;
}

Connection& Pool::shared(int database, std::size_t affinity, int protocol) {
  auto& connections = shared_[{database, protocol}];
  if (connections.empty()) {
    const int count = std::max(1, settings_.connections_per_thread);
    for (int i = 0; i < count; ++i) {
      // Only the default database's RESP2 connections count for readiness.
      auto* ready = database == settings_.database && protocol == 2 ? ready_connections_ : nullptr;
      auto connection = std::make_shared<Connection>(
          executor_, options_for(database, true, protocol), stats_, ready);
      connection->start();
      connections.push_back(std::move(connection));
    }
  }
  return *connections[affinity % connections.size()];
}

std::shared_ptr<Link> Pool::dedicated(int database, int protocol) {
  // A link another session left clean is ready and costs no new connection.
  if (auto returned = std::exchange(returned_[{database, protocol}], nullptr)) {
    if (returned->state() == Link::State::ready) return returned;
    returned->close();
  }
  auto& spare = spare_[{database, protocol}];
  // Still connecting, it is ready sooner than a connection opened now; closed (the server went
  // away), it is of no use.
  auto connection = std::exchange(spare, open_dedicated(database, protocol));
  if (connection && connection->state() != Link::State::ready &&
      connection->state() != Link::State::connecting) {
    connection->close();
    connection = nullptr;
  }
  return connection ? connection : open_dedicated(database, protocol);
}

void Pool::recycle_dedicated(std::shared_ptr<Link> link, int database, int protocol) {
  auto& returned = returned_[{database, protocol}];
  const bool usable =
      link->state() == Link::State::ready && link->in_flight() == 0 && !shared_.empty();
  if (!usable || (returned && returned->state() == Link::State::ready)) {
    link->close();
    return;
  }
  if (returned) returned->close();
  returned = std::move(link);
}

std::shared_ptr<Connection> Pool::open_dedicated(int database, int protocol) {
  auto connection = std::make_shared<Connection>(executor_, options_for(database, false, protocol),
                                                 stats_, nullptr);
  connection->start();
  return connection;
}

}  // namespace corral::upstream
