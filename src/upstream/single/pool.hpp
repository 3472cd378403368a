// The upstream connections of one io thread: shared multiplexed connections per database and
// protocol (RESP2, RESP3), and dedicated connections for sessions in a stateful mode (MULTI,
// blocking, pub/sub ...).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "config/settings.hpp"
#include "upstream/connection.hpp"
#include "upstream/link.hpp"
#include "upstream/user_login.hpp"

namespace corral::upstream {

class Pool final : public Links {
 public:
  // With `user`, every connection runs as that upstream ACL user; `settings` keep Corral's own
  // credentials, which select the user's entered database before the user logs in.
  Pool(const boost::asio::any_io_executor& executor, const config::UpstreamSettings& settings,
       metrics::ThreadStats* stats, std::atomic<int>* ready_connections,
       std::optional<UserLogin> user = std::nullopt);
  ~Pool() override;

  // Opens the shared connections of the default database now, so readiness is known before clients
  // come.
  void start();
  void close();
  // The server refused a shared connection's last login (a user pool's user was deleted or its
  // password changed): until a retry succeeds, the pool serves nothing.
  bool refused() const;

  // A shared connection for `database`. A client always passes the same `affinity` (its id), so
  // all its commands travel one connection and Redis runs them in the order it sent them.
  // `protocol` 3: connections that did HELLO 3, for RESP3 clients.
  Connection& shared(int database, std::size_t affinity = 0, int protocol = 2);
  // A connection owned by one session; it does not reconnect, and blocking commands on it may be
  // exempted from the command timeout. It is the spare opened for this database and protocol
  // ahead of time (so the session's first command leaves without waiting for a connect and a
  // handshake, ahead of those of sessions that come after it), and a new spare is opened; or the
  // link an earlier session left clean (recycle_dedicated), which needs no new connection.
  std::shared_ptr<Link> dedicated(int database, int protocol = 2);

  // Links: the same connections, for the proxy's dispatcher.
  bool send_shared(int database, std::size_t affinity, std::string_view command,
                   std::shared_ptr<ReplyTarget> target, std::uint64_t tag, int protocol) override {
    return shared(database, affinity, protocol).send(command, std::move(target), tag);
  }
  std::shared_ptr<Link> dedicated_link(int database, int protocol) override {
    return dedicated(database, protocol);
  }
  // Kept for the next dedicated() of its database and protocol (one a key; others are closed).
  void recycle_dedicated(std::shared_ptr<Link> link, int database, int protocol) override;
  std::uint64_t server_epoch() override { return shared(settings_.database).generation(); }

 private:
  ConnectionOptions options_for(int database, bool reconnect, int protocol) const;
  std::shared_ptr<Connection> open_dedicated(int database, int protocol);

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  metrics::ThreadStats* stats_;
  std::atomic<int>* ready_connections_;
  std::optional<UserLogin> user_;
  // Keyed by (database, protocol).
  std::map<std::pair<int, int>, std::vector<std::shared_ptr<Connection>>> shared_;
  // One session link per (database, protocol) in use, opened before a session needs it.
  std::map<std::pair<int, int>, std::shared_ptr<Connection>> spare_;
  // One session link per (database, protocol) that a session left clean (recycle_dedicated).
  std::map<std::pair<int, int>, std::shared_ptr<Link>> returned_;
};

}  // namespace corral::upstream
