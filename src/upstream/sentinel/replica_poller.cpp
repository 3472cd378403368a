// One poll round reads the primary before the replicas: a replica's offset read after the
// primary's can only be nearer to it, so the lag a round measures is at most the replica's real
// lag when the primary was read. A replica left out by max_replica_lag was that far behind.
#include "upstream/sentinel/replica_poller.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "config/values.hpp"
#include "upstream/call.hpp"
#include "upstream/connection.hpp"
#include "upstream/replication_info.hpp"
#include "upstream/sentinel/replica_info.hpp"

namespace corral::upstream {

namespace asio = boost::asio;
using asio::awaitable;

namespace {
constexpr config::Duration kPollInterval{100};
// Rounds between two SENTINEL REPLICAS questions when nothing changed: one second.
constexpr int kRoundsPerListing = 10;
}  // namespace

ReplicaPoller::ReplicaPoller(const asio::any_io_executor& executor,
                             const config::UpstreamSettings& settings,
                             std::shared_ptr<ReplicaView> view,
                             std::shared_ptr<SentinelStatus> status)
    : executor_(executor),
      settings_(settings),
      view_(std::move(view)),
      status_(std::move(status)),
      timer_(executor),
      offsets_(executor, settings) {}

void ReplicaPoller::start() {
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->poll_loop(); }, asio::detached);
}

void ReplicaPoller::stop() {
  stopping_ = true;
  timer_.cancel();
  offsets_.close();
}

void ReplicaPoller::use_primary(const config::Endpoint& primary) {
  primary_ = primary;
  must_list_ = true;
}

void ReplicaPoller::forget_unlisted_nodes() {
  std::vector<std::string> listed;
  if (primary_) listed.push_back(config::format_endpoint(*primary_));
  for (const auto& replica : replicas_) listed.push_back(config::format_endpoint(replica));
  offsets_.keep_only(listed);
}

awaitable<void> ReplicaPoller::poll_loop() {
  auto self = shared_from_this();
  for (int round = 0; !stopping_; ++round) {
    if (must_list_ || round % kRoundsPerListing == 0) {
      if (auto listed = co_await ask_sentinels()) {
        must_list_ = false;
        replicas_ = std::move(*listed);
        forget_unlisted_nodes();
      }
    }
    const auto primary_offset = co_await poll_primary();
    auto usable = co_await poll_replicas(primary_offset);
    if (stopping_) break;
    status_->replicas_usable.store(static_cast<int>(usable.size()), std::memory_order_relaxed);
    view_->publish_replicas(std::move(usable));
    timer_.expires_after(kPollInterval);
    boost::system::error_code ignored;
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

awaitable<std::optional<std::vector<config::Endpoint>>> ReplicaPoller::ask_sentinels() {
  const auto& sentinel = *settings_.sentinel;
  const std::string_view ask[] = {"SENTINEL", "REPLICAS", sentinel.master};
  for (const auto& address : sentinel.addresses) {
    auto options = node_connection_options(settings_, address, false);
    options.username = sentinel.username;
    options.password = sentinel.password;
    auto connection = std::make_shared<Connection>(executor_, std::move(options), nullptr);
    connection->start();
    const auto answer = co_await call(*connection, ask);
    connection->close();
    if (answer.ok() && !answer.redis_error()) co_return parse_sentinel_replicas(answer.reply);
  }
  co_return std::nullopt;
}

awaitable<std::optional<std::uint64_t>> ReplicaPoller::poll_primary() {
  if (!primary_) co_return std::nullopt;
  // Numbered before it is sent: a client whose write was acknowledged before this number was
  // taken finds its write inside the offset this poll reads.
  const auto poll = view_->begin_primary_poll();
  const auto started = std::chrono::steady_clock::now();
  const auto offset = co_await offsets_.primary_offset(*primary_);
  if (offset) view_->finish_primary_poll(poll, *offset, started);
  co_return offset;
}

awaitable<std::vector<ReplicaOffset>> ReplicaPoller::poll_replicas(
    std::optional<std::uint64_t> primary_offset) {
  std::vector<ReplicaOffset> usable;
  const auto listed = replicas_;  // the list may be replaced while a reply is awaited
  std::vector<std::pair<std::string, std::uint64_t>> lags;
  for (const auto& replica : listed) {
    if (stopping_) break;
    const auto offset = co_await offsets_.replica_offset(replica);
    if (!offset) continue;
    if (primary_offset) {
      lags.emplace_back(config::format_endpoint(replica),
                        *primary_offset > *offset ? *primary_offset - *offset : 0);
    }
    if (!within_replica_lag(primary_offset, *offset, settings_.max_replica_lag)) continue;
    usable.push_back({replica, *offset, {}});
  }
  if (!stopping_) status_->set_replica_lags(std::move(lags));
  co_return usable;
}

}  // namespace corral::upstream
