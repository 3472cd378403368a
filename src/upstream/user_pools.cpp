// Per-user pools of one io thread: built on first use, handed out as an Upstream, reaped idle.
#include "upstream/user_pools.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace corral::upstream {

// Clients hold the user's upstream through an aliasing pointer, so the entry's use count says
// whether any client still needs it.
struct UserPools::Entry {
  explicit Entry(std::unique_ptr<UserUpstream> built) : user(std::move(built)) {}

  std::unique_ptr<UserUpstream> user;
  std::chrono::steady_clock::time_point last_held = std::chrono::steady_clock::now();
};

UserPools::UserPools(const boost::asio::any_io_executor& executor,
                     const config::UpstreamSettings& settings, std::atomic<int>* user_pools,
                     Factory factory)
    : executor_(executor),
      settings_(settings),
      user_pools_(user_pools),
      factory_(std::move(factory)),
      reaper_(executor) {}

UserPools::~UserPools() {
  alive_.reset();
  reaper_.cancel();
  if (user_pools_ != nullptr) user_pools_->fetch_sub(static_cast<int>(pools_.size()));
}

UserUpstreamResult UserPools::acquire(std::string_view user, std::string_view password,
                                      int entered_database) {
  Key key{std::string(user), std::string(password), entered_database};
  auto found = pools_.find(key);
  // The upstream has just accepted this pair, yet the pool's logins are refused: the user was
  // deleted and created again. A fresh pool logs in now instead of at its next retry (up to
  // seconds away); clients still holding the old one keep it until they let go.
  if (found != pools_.end() && found->second->user->refused()) {
    pools_.erase(found);
    if (user_pools_ != nullptr) user_pools_->fetch_sub(1);
    found = pools_.end();
  }
  if (found == pools_.end()) {
    reap();
    if (pools_.size() >= static_cast<std::size_t>(settings_.max_user_pools)) {
      return {nullptr, UserUpstreamRefusal::too_many_users};
    }
    UserLogin login{std::string(user), std::string(password), entered_database};
    found =
        pools_.emplace(std::move(key), std::make_shared<Entry>(factory_(std::move(login)))).first;
    if (user_pools_ != nullptr) user_pools_->fetch_add(1);
    schedule_reap();
  }
  const auto& entry = found->second;
  entry->last_held = std::chrono::steady_clock::now();
  return {std::shared_ptr<Upstream>(entry, &entry->user->upstream()), UserUpstreamRefusal::none};
}

void UserPools::reap() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = pools_.begin(); it != pools_.end();) {
    auto& entry = *it->second;
    // Held by a connected client: its idle time starts when the last one lets go.
    if (it->second.use_count() > 1) {
      entry.last_held = now;
      ++it;
    } else if (now - entry.last_held >= settings_.user_pool_idle_timeout) {
      spdlog::debug("upstream user {}: idle pool closed", std::get<0>(it->first));
      it = pools_.erase(it);
      if (user_pools_ != nullptr) user_pools_->fetch_sub(1);
    } else {
      ++it;
    }
  }
}

void UserPools::schedule_reap() {
  if (reaping_) return;
  reaping_ = true;
  // Sweeps a few times per idle timeout: a pool goes within about 1.25 timeouts of its last use.
  reaper_.expires_after(
      std::max<config::Duration>(config::Duration(100), settings_.user_pool_idle_timeout / 4));
  reaper_.async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired()) return;
        reaping_ = false;
        reap();
        if (!pools_.empty()) schedule_reap();
      });
}

}  // namespace corral::upstream
