// One io thread's connections to the primary a Sentinel named: a single-Redis Pool per primary,
// swapped when the primary changes, and the failover hold that keeps commands from the old
// primary between the announcement of a promotion and the switch. Upstream ACL users' links
// follow Corral's own through the same switches and holds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/settings.hpp"
#include "upstream/link.hpp"
#include "upstream/sentinel/sentinel_status.hpp"
#include "upstream/single/pool.hpp"
#include "upstream/user_login.hpp"

namespace corral::metrics {
class ThreadStats;
}

namespace corral::upstream {

// What a held command is answered when the failover does not end within failover_hold.
inline constexpr std::string_view kErrFailoverHold =
    "ERR upstream failover in progress; the command was not sent (failover_hold expired)";

class SentinelLinks final : public Links {
 public:
  // `ready_connections` counts the ready shared connections (for /readyz), as Pool does. With
  // `user`, every connection logs in as that upstream ACL user (see Pool).
  SentinelLinks(const boost::asio::any_io_executor& executor,
                const config::UpstreamSettings& settings, metrics::ThreadStats* stats,
                std::atomic<int>* ready_connections, std::shared_ptr<SentinelStatus> status,
                std::optional<UserLogin> user = std::nullopt);
  ~SentinelLinks() override;

  // Links of the upstream ACL user `login` that follow these: on the primary these use now, held
  // if these hold, and switched, held and released with them from now on (the Sentinel watch
  // tells only Corral's own links of each thread). The follower lives as long as its holder.
  std::shared_ptr<SentinelLinks> follower(UserLogin login);
  const std::shared_ptr<SentinelStatus>& status() const { return status_; }
  // The server refused a user's login on the current primary (see Pool::refused).
  bool refused() const { return pool_ && pool_->refused(); }

  // The primary is `primary` from now on (on this thread): new shared connections to it, the
  // held commands sent there in the order they came, the old primary's client-owned links
  // closed (their state lives on a server that is no longer the primary). No-op when unchanged,
  // except that it ends a hold.
  void use_primary(const config::Endpoint& primary);
  // A Sentinel announced a promotion: commands wait from now until use_primary or release, at
  // most failover_hold, then get kErrFailoverHold.
  void hold();
  // The failover was aborted: the held commands go to the primary there is.
  void release();
  void close();

  bool send_shared(int database, std::size_t affinity, std::string_view command,
                   std::shared_ptr<ReplyTarget> target, std::uint64_t tag, int protocol) override;
  // Null while no primary is known or a failover is held: a transaction or subscription opened
  // on the old primary then would run where its writes are discarded.
  std::shared_ptr<Link> dedicated_link(int database, int protocol) override;
  std::uint64_t server_epoch() override;

 private:
  struct Held {
    int database;
    std::size_t affinity;
    std::string command;
    std::shared_ptr<ReplyTarget> target;
    std::uint64_t tag;
    int protocol;
  };

  void send_held();
  void expire_held();
  void retire(std::shared_ptr<Pool> pool);
  void close_session_links();
  template <typename Step>
  void tell_followers(Step step);

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  metrics::ThreadStats* stats_;
  std::atomic<int>* ready_connections_;
  std::shared_ptr<SentinelStatus> status_;
  std::optional<UserLogin> user_;
  std::vector<std::weak_ptr<SentinelLinks>> followers_;
  std::shared_ptr<Pool> pool_;  // null until a primary is known
  config::Endpoint primary_;
  std::uint64_t switches_ = 0;
  std::vector<std::weak_ptr<Link>> session_links_;
  bool holding_ = false;
  std::deque<Held> held_;
  std::size_t held_bytes_ = 0;
  boost::asio::steady_timer hold_timer_;
  bool closed_ = false;
};

}  // namespace corral::upstream
