// One io thread's upstream connections for clients that authenticated as an upstream ACL user:
// a pool per (user, password, database) in use, bounded in number, closed once idle. The kind of
// upstream builds each pool (a factory); this keeps them.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/settings.hpp"
#include "upstream/upstream.hpp"
#include "upstream/user_login.hpp"

namespace corral::upstream {

class UserPools {
 public:
  using Factory = std::function<std::unique_ptr<UserUpstream>(UserLogin)>;

  // `user_pools` (may be null) counts the pools open across io threads, for a gauge.
  UserPools(const boost::asio::any_io_executor& executor, const config::UpstreamSettings& settings,
            std::atomic<int>* user_pools, Factory factory);
  ~UserPools();
  UserPools(const UserPools&) = delete;
  UserPools& operator=(const UserPools&) = delete;

  // The upstream that runs every command as `user` (its shared and session links log in with
  // `password`) for a client that authenticated in `entered_database`; it stays open while the
  // result is held, and for the idle timeout after. Refused with too_many_users when
  // max_user_pools pools are held by clients.
  UserUpstreamResult acquire(std::string_view user, std::string_view password,
                             int entered_database);

  // Closes the pools that no client has held for the idle timeout.
  void reap();
  std::size_t open_pools() const { return pools_.size(); }

 private:
  struct Entry;
  void schedule_reap();

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  std::atomic<int>* user_pools_;
  Factory factory_;
  // Keyed by user name, password and entered database: a user with several passwords gets a
  // pool per password, so that a reconnect logs in with the password its client proved; a pool
  // per database its clients authenticated in, whose links only they may use (see UserLogin).
  using Key = std::tuple<std::string, std::string, int>;
  std::map<Key, std::shared_ptr<Entry>> pools_;
  boost::asio::steady_timer reaper_;
  bool reaping_ = false;
  // The reaper's callback may run after a cancel that came too late: it checks this first.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace corral::upstream
