// The watch's conversations: one subscribed connection per Sentinel (reopened with backoff; each
// reopening means events may have been missed, so the Sentinels are asked again), and the
// discovery loop, which asks when told to and whenever the primary's connections are down.
#include "upstream/sentinel/sentinel_watch.hpp"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "config/values.hpp"
#include "resp/reply.hpp"
#include "upstream/async_event.hpp"
#include "upstream/call.hpp"
#include "upstream/connection.hpp"

namespace corral::upstream {

namespace asio = boost::asio;
using asio::awaitable;

namespace {
// How often the discovery loop looks at the primary's connections when nothing woke it.
constexpr config::Duration kRecheckInterval{500};

bool same(const config::Endpoint& a, const config::Endpoint& b) {
  return a.host == b.host && a.port == b.port;
}

awaitable<void> pause(asio::steady_timer& timer, config::Duration duration) {
  timer.expires_after(duration);
  boost::system::error_code ignored;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}
}  // namespace

// The subscribed connection's messages, read as they arrive; tells when the connection ended.
class SentinelWatch::Inbox final : public ReplyTarget {
 public:
  Inbox(const asio::any_io_executor& executor, std::weak_ptr<SentinelWatch> watch,
        std::size_t sentinel)
      : ended_event_(executor), watch_(std::move(watch)), sentinel_(sentinel) {}
  void on_reply(std::uint64_t, std::string_view message) override {
    if (auto watch = watch_.lock()) watch->on_message(sentinel_, message);
  }
  void on_failure(std::uint64_t, std::string_view) override {
    ended_ = true;
    ended_event_.notify();
  }
  bool ended() const { return ended_; }
  awaitable<void> wait_end() {
    while (!ended_) co_await ended_event_.wait();
  }

 private:
  AsyncEvent ended_event_;
  std::weak_ptr<SentinelWatch> watch_;
  std::size_t sentinel_;
  bool ended_ = false;
};

SentinelWatch::SentinelWatch(const asio::any_io_executor& executor,
                             const config::UpstreamSettings& settings,
                             std::shared_ptr<SentinelStatus> status, Handlers handlers)
    : executor_(executor),
      settings_(settings),
      status_(std::move(status)),
      handlers_(std::move(handlers)),
      failovers_(settings.sentinel->failover_hold),
      recheck_timer_(executor),
      subscriptions_(settings.sentinel->addresses.size()) {}

void SentinelWatch::start() {
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->discover_loop(); }, asio::detached);
  for (std::size_t i = 0; i < settings_.sentinel->addresses.size(); ++i) {
    asio::co_spawn(
        executor_, [self = shared_from_this(), i] { return self->subscribe_loop(i); },
        asio::detached);
  }
}

void SentinelWatch::stop() {
  stopping_ = true;
  recheck_timer_.cancel();
  for (const auto& connection : subscriptions_) {
    if (connection) connection->close();
  }
}

std::shared_ptr<Connection> SentinelWatch::sentinel_connection(
    const config::Endpoint& address) const {
  const auto& sentinel = *settings_.sentinel;
  auto options = node_connection_options(settings_, address, false);
  options.username = sentinel.username;
  options.password = sentinel.password;
  auto connection = std::make_shared<Connection>(executor_, std::move(options), nullptr);
  connection->start();
  return connection;
}

std::shared_ptr<Connection> SentinelWatch::node_connection(const config::Endpoint& node) const {
  auto connection = std::make_shared<Connection>(
      executor_, node_connection_options(settings_, node, false), nullptr);
  connection->start();
  return connection;
}

void SentinelWatch::ask_again() {
  must_ask_ = true;
  recheck_timer_.cancel();
}

awaitable<void> SentinelWatch::discover_loop() {
  auto self = shared_from_this();
  while (!stopping_) {
    if (!must_ask_ && primary_ && !handlers_.primary_reachable()) must_ask_ = true;
    if (must_ask_) {
      must_ask_ = false;
      const auto named = co_await ask_sentinels();
      if (!named) {
        must_ask_ = true;
      } else if (!primary_ || !same(*named, *primary_)) {
        if (!co_await adopt(*named)) must_ask_ = true;
      }
    }
    if (stopping_) break;
    co_await pause(recheck_timer_, kRecheckInterval);
  }
}

awaitable<std::optional<config::Endpoint>> SentinelWatch::ask_sentinels() {
  const auto& sentinel = *settings_.sentinel;
  const std::string_view ask[] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", sentinel.master};
  // Right after a switch a Sentinel that has not heard of it yet still names the old primary,
  // which keeps answering ROLE as a primary until it is reconfigured: most answers win.
  std::vector<std::pair<config::Endpoint, int>> votes;
  std::string problems;  // why each Sentinel gave no primary, logged when none does
  for (const auto& address : sentinel.addresses) {
    auto connection = sentinel_connection(address);
    const auto answer = co_await call(*connection, ask);
    connection->close();
    if (!answer.ok() || answer.redis_error()) {
      const auto why = answer.ok() ? answer.reply.substr(1, answer.reply.size() - 3) : answer.error;
      problems += "; " + config::format_endpoint(address) + ": " + why;
      continue;
    }
    const auto named = parse_master_address(answer.reply);
    if (!named) {
      problems += "; " + config::format_endpoint(address) + ": knows no master of that name";
      continue;
    }
    auto it = std::find_if(votes.begin(), votes.end(),
                           [&](const auto& vote) { return same(vote.first, *named); });
    if (it == votes.end()) {
      votes.emplace_back(*named, 1);
    } else {
      ++it->second;
    }
  }
  // Logged when asking starts or stops failing, not at every retry.
  if (votes.empty() != asks_failing_) {
    asks_failing_ = votes.empty();
    if (asks_failing_) {
      spdlog::warn("no Sentinel names a primary of {} (asking again every {} ms){}",
                   sentinel.master, kRecheckInterval.count(), problems);
    } else {
      spdlog::info("the Sentinels answer again");
    }
  }
  if (votes.empty()) co_return std::nullopt;
  const auto best = std::max_element(
      votes.begin(), votes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  co_return best->first;
}

awaitable<bool> SentinelWatch::is_primary(const config::Endpoint& candidate) {
  auto connection = node_connection(candidate);
  const std::string_view role[] = {"ROLE"};
  const auto answer = co_await call(*connection, role);
  connection->close();
  co_return answer.ok() && role_is_primary(answer.reply);
}

awaitable<bool> SentinelWatch::adopt(config::Endpoint candidate) {
  auto self = shared_from_this();
  const auto address = config::format_endpoint(candidate);
  if (!co_await is_primary(candidate)) {
    // Once per candidate: a dead primary is named again at every recheck until the failover.
    if (address != unconfirmed_) {
      spdlog::warn("{} is named primary of {} but ROLE does not confirm it (yet)", address,
                   settings_.sentinel->master);
      unconfirmed_ = address;
    }
    co_return false;
  }
  unconfirmed_.clear();
  if (stopping_) co_return false;
  // Another adoption may have finished while ROLE was asked.
  const bool changed = !primary_ || !same(*primary_, candidate);
  if (changed) {
    spdlog::info("primary of {} is {}", settings_.sentinel->master,
                 config::format_endpoint(candidate));
    if (primary_) status_->primary_switches.fetch_add(1, std::memory_order_relaxed);
    primary_ = candidate;
    status_->set_primary(config::format_endpoint(candidate));
    status_->primary_known.store(true, std::memory_order_relaxed);
  }
  failovers_.ended();
  status_->holding.store(false, std::memory_order_relaxed);
  // Also when unchanged: it ends a hold whose promotion named the primary Corral already had.
  handlers_.primary_changed(candidate);
  co_return true;
}

awaitable<void> SentinelWatch::subscribe_loop(std::size_t index) {
  auto self = shared_from_this();
  const auto address = settings_.sentinel->addresses[index];
  auto backoff = settings_.reconnect_backoff_min;
  std::vector<std::string_view> subscribe{"SUBSCRIBE"};
  for (const auto channel : sentinel_event_channels()) subscribe.push_back(channel);
  asio::steady_timer timer(executor_);
  while (!stopping_) {
    auto connection = sentinel_connection(address);
    subscriptions_[index] = connection;
    auto inbox = std::make_shared<Inbox>(executor_, weak_from_this(), index);
    connection->set_unsolicited_target(inbox);
    const auto subscribed = co_await call(*connection, subscribe);
    if (subscribed.ok() && !subscribed.redis_error()) {
      status_->sentinels_subscribed.fetch_add(1, std::memory_order_relaxed);
      // Events may have been missed while this Sentinel was not heard.
      ask_again();
      if (handlers_.replicas_changed) handlers_.replicas_changed();
      backoff = settings_.reconnect_backoff_min;
      co_await inbox->wait_end();
      status_->sentinels_subscribed.fetch_sub(1, std::memory_order_relaxed);
      spdlog::warn("subscription to Sentinel {} lost", config::format_endpoint(address));
    } else {
      backoff = std::min(backoff * 2, settings_.reconnect_backoff_max);
    }
    connection->close();
    if (stopping_) break;
    co_await pause(timer, backoff);
  }
}

void SentinelWatch::on_message(std::size_t sentinel, std::string_view message) {
  const auto decoded = resp::decode_reply(message);
  if (!decoded || decoded->type != resp::Reply::Type::array || decoded->elements.size() != 3 ||
      decoded->elements[0].text != "message") {
    return;  // subscription confirmations
  }
  const auto event = parse_sentinel_event(decoded->elements[1].text, decoded->elements[2].text);
  if (event && event->master == settings_.sentinel->master) on_event(sentinel, *event);
}

void SentinelWatch::on_event(std::size_t sentinel, const SentinelEvent& event) {
  const auto& master = settings_.sentinel->master;
  const auto now = AnnouncedFailovers::Clock::now();
  switch (event.kind) {
    case SentinelEventKind::failover_starting:
      // A step read after the switch it led to (a Sentinel's link slower than another's): the
      // primary it replaces is no longer the one in use, and holding would only delay commands.
      if (primary_ && !same(*primary_, event.from)) return;
      failovers_.announced(sentinel, now);
      if (!status_->holding.exchange(true, std::memory_order_relaxed)) {
        spdlog::info("failover of {} announced by Sentinel {}: commands wait for the new primary",
                     master, config::format_endpoint(settings_.sentinel->addresses[sentinel]));
      }
      // At every step, not only the first: a thread whose hold expired holds again.
      handlers_.failover_starting();
      return;
    case SentinelEventKind::aborted:
      if (!failovers_.aborted(sentinel, now)) {
        spdlog::info("failover of {} aborted by Sentinel {}; another Sentinel's is in progress",
                     master, config::format_endpoint(settings_.sentinel->addresses[sentinel]));
        return;
      }
      if (status_->holding.exchange(false, std::memory_order_relaxed)) {
        spdlog::info("failover of {} aborted: the held commands go to {}", master,
                     status_->primary());
        handlers_.failover_aborted();
      }
      return;
    case SentinelEventKind::replicas_changed:
      if (handlers_.replicas_changed) handlers_.replicas_changed();
      return;
    case SentinelEventKind::promoted:
    case SentinelEventKind::switched:
      if (primary_ && same(*primary_, event.primary) && !status_->holding.load()) return;
      asio::co_spawn(
          executor_,
          [self = shared_from_this(), primary = event.primary]() -> awaitable<void> {
            if (!co_await self->adopt(primary)) self->ask_again();
          },
          asio::detached);
      return;
  }
}

}  // namespace corral::upstream
