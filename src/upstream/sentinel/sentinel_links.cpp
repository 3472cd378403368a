// The swap and the hold. A replaced pool is kept for one command timeout so that commands sent
// to the old primary before the hold began still get their replies, then closed.
#include "upstream/sentinel/sentinel_links.hpp"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "upstream/connection.hpp"

namespace corral::upstream {

namespace asio = boost::asio;

namespace {
// Commands held on one thread, by their bytes: beyond this a command is refused at once rather
// than growing memory without bound while a failover runs.
constexpr std::size_t kMaxHeldBytes = std::size_t{64} << 20;
}  // namespace

SentinelLinks::SentinelLinks(const asio::any_io_executor& executor,
                             const config::UpstreamSettings& settings, metrics::ThreadStats* stats,
                             std::atomic<int>* ready_connections,
                             std::shared_ptr<SentinelStatus> status, std::optional<UserLogin> user)
    : executor_(executor),
      settings_(settings),
      stats_(stats),
      ready_connections_(ready_connections),
      status_(std::move(status)),
      user_(std::move(user)),
      hold_timer_(executor) {}

SentinelLinks::~SentinelLinks() { close(); }

std::shared_ptr<SentinelLinks> SentinelLinks::follower(UserLogin login) {
  // A user's connections are not Corral's: they do not count towards readiness.
  auto links = std::make_shared<SentinelLinks>(executor_, settings_, stats_, nullptr, status_,
                                               std::move(login));
  if (pool_) links->use_primary(primary_);
  if (holding_) links->hold();
  std::erase_if(followers_, [](const auto& weak) { return weak.expired(); });
  followers_.push_back(links);
  return links;
}

template <typename Step>
void SentinelLinks::tell_followers(Step step) {
  std::erase_if(followers_, [](const auto& weak) { return weak.expired(); });
  for (const auto& weak : followers_) {
    if (auto links = weak.lock()) step(*links);
  }
}

void SentinelLinks::use_primary(const config::Endpoint& primary) {
  if (closed_) return;
  tell_followers([&primary](SentinelLinks& links) { links.use_primary(primary); });
  const bool same = pool_ && primary.host == primary_.host && primary.port == primary_.port;
  if (!same) {
    auto settings = settings_;
    settings.servers = {primary};
    auto next = std::make_shared<Pool>(executor_, settings, stats_, ready_connections_, user_);
    // A user's connections open on its clients' first commands, as on one Redis.
    if (!user_) next->start();
    if (pool_) {
      close_session_links();
      retire(std::move(pool_));
    }
    pool_ = std::move(next);
    primary_ = primary;
    ++switches_;
  }
  holding_ = false;
  hold_timer_.cancel();
  send_held();
}

void SentinelLinks::hold() {
  if (closed_) return;
  tell_followers([](SentinelLinks& links) { links.hold(); });
  if (holding_) return;
  holding_ = true;
  hold_timer_.expires_after(settings_.sentinel->failover_hold);
  hold_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec && holding_) expire_held();
  });
}

void SentinelLinks::release() {
  tell_followers([](SentinelLinks& links) { links.release(); });
  if (!holding_) return;
  holding_ = false;
  hold_timer_.cancel();
  send_held();
}

void SentinelLinks::close() {
  if (closed_) return;
  closed_ = true;
  tell_followers([](SentinelLinks& links) { links.close(); });
  followers_.clear();
  hold_timer_.cancel();
  holding_ = false;
  pool_.reset();
  std::deque<Held> held;
  held.swap(held_);
  held_bytes_ = 0;
  for (auto& h : held) h.target->on_error(h.tag, ErrorKind::closed, kErrClosed);
}

bool SentinelLinks::send_shared(int database, std::size_t affinity, std::string_view command,
                                std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
                                int protocol) {
  if (holding_) {
    if (held_bytes_ + command.size() > kMaxHeldBytes) return false;
    held_bytes_ += command.size();
    held_.push_back({database, affinity, std::string(command), std::move(target), tag, protocol});
    status_->held_commands.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (!pool_) return false;
  return pool_->send_shared(database, affinity, command, std::move(target), tag, protocol);
}

std::shared_ptr<Link> SentinelLinks::dedicated_link(int database, int protocol) {
  if (!pool_ || holding_) return nullptr;
  auto link = pool_->dedicated_link(database, protocol);
  std::erase_if(session_links_, [](const auto& weak) { return weak.expired(); });
  session_links_.push_back(link);
  return link;
}

std::uint64_t SentinelLinks::server_epoch() {
  // A new primary is a new server even when its connection count happens to match.
  return (switches_ << 32) + (pool_ ? pool_->server_epoch() : 0);
}

void SentinelLinks::send_held() {
  std::deque<Held> held;
  held.swap(held_);
  held_bytes_ = 0;
  for (auto& h : held) {
    if (pool_ &&
        pool_->send_shared(h.database, h.affinity, h.command, h.target, h.tag, h.protocol)) {
      continue;
    }
    h.target->on_error(h.tag, ErrorKind::upstream_unavailable, kErrUnavailable);
  }
}

void SentinelLinks::expire_held() {
  holding_ = false;
  // A later announcement must start a hold again.
  status_->holding.store(false, std::memory_order_relaxed);
  std::deque<Held> held;
  held.swap(held_);
  held_bytes_ = 0;
  status_->hold_expired.fetch_add(held.size(), std::memory_order_relaxed);
  if (!held.empty()) {
    spdlog::warn(
        "failover not finished within failover_hold: {} held commands answered with "
        "an error",
        held.size());
  }
  for (auto& h : held) h.target->on_error(h.tag, ErrorKind::upstream_unavailable, kErrFailoverHold);
}

void SentinelLinks::retire(std::shared_ptr<Pool> pool) {
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(settings_.command_timeout);
  asio::co_spawn(
      executor_,
      [pool = std::move(pool), timeout]() -> asio::awaitable<void> {
        asio::steady_timer timer(co_await asio::this_coro::executor);
        timer.expires_after(timeout);
        boost::system::error_code ignored;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        pool->close();
      },
      asio::detached);
}

void SentinelLinks::close_session_links() {
  for (const auto& weak : session_links_) {
    if (auto link = weak.lock(); link && link->state() != Link::State::closed) {
      link->close();
      status_->session_links_closed.fetch_add(1, std::memory_order_relaxed);
    }
  }
  session_links_.clear();
}

}  // namespace corral::upstream
