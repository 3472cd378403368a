// Finds and follows the primary of a Sentinel-managed Redis: asks the Sentinels
// (SENTINEL GET-MASTER-ADDR-BY-NAME), confirms with ROLE, and listens on every Sentinel's
// pub/sub for the failover's announcement, promotion and +switch-master. Process-wide, on one
// io thread; what it learns goes out through its handlers.
#pragma once

#include <utility>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/settings.hpp"
#include "upstream/sentinel/announced_failovers.hpp"
#include "upstream/sentinel/sentinel_event.hpp"
#include "upstream/sentinel/sentinel_status.hpp"

namespace corral::upstream {

class Connection;

class SentinelWatch : public std::enable_shared_from_this<SentinelWatch> {
 public:
  struct Handlers {
    // The primary to use from now on (the first one found, then each new one).
    std::function<void(const config::Endpoint&)> primary_changed;
    // A Sentinel announced a step of a failover (called at each one: a hold that expired
    // starts again).
    std::function<void()> failover_starting;
    // Every announced failover was aborted before any promotion.
    std::function<void()> failover_aborted;
    // Whether the primary's connections work; when not, the Sentinels are asked again.
    std::function<bool()> primary_reachable;
    // The replicas may have changed (an event about one, or events missed while a Sentinel's
    // subscription was down). Optional.
    std::function<void()> replicas_changed;
  };

  SentinelWatch(const boost::asio::any_io_executor& executor,
                const config::UpstreamSettings& settings, std::shared_ptr<SentinelStatus> status,
                Handlers handlers);

  void start();
  void stop();

 private:
  class Inbox;

  boost::asio::awaitable<void> discover_loop();
  boost::asio::awaitable<void> subscribe_loop(std::size_t sentinel);
  // The primary most Sentinels that answer name now.
  boost::asio::awaitable<std::optional<config::Endpoint>> ask_sentinels();
  boost::asio::awaitable<bool> is_primary(const config::Endpoint& candidate);
  // Switches to `candidate` once ROLE confirms it; false when it is not (yet) a primary.
  boost::asio::awaitable<bool> adopt(config::Endpoint candidate);
  // A message on the subscription to Sentinel `sentinel` (its index in the addresses).
  void on_message(std::size_t sentinel, std::string_view message);
  void on_event(std::size_t sentinel, const SentinelEvent& event);
  void ask_again();
  std::shared_ptr<Connection> sentinel_connection(const config::Endpoint& address) const;
  std::shared_ptr<Connection> node_connection(const config::Endpoint& node) const;

  boost::asio::any_io_executor executor_;
  config::UpstreamSettings settings_;
  std::shared_ptr<SentinelStatus> status_;
  Handlers handlers_;
  std::optional<config::Endpoint> primary_;
  AnnouncedFailovers failovers_;
  bool must_ask_ = true;
  bool asks_failing_ = false;
  std::string unconfirmed_;  // the last candidate ROLE did not confirm, logged once
  bool stopping_ = false;
  boost::asio::steady_timer recheck_timer_;
  std::vector<std::shared_ptr<Connection>> subscriptions_;
};

}  // namespace corral::upstream
