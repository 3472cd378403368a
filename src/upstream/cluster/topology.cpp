// The topology refresh: a coroutine per refresh round that tries the known nodes (primaries
// first), then the seeds, each on a short-lived connection, and publishes the first usable map.
#include "upstream/cluster/topology.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "upstream/call.hpp"
#include "upstream/cluster/cluster_replica_poller.hpp"
#include "upstream/connection.hpp"

namespace corral::upstream {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

// "At most once a second": a burst of MOVED replies after a reshard costs one refresh.
constexpr std::chrono::seconds kMinInterval{1};

bool unknown_subcommand(const CallResult& result) {
  return result.redis_error() && (result.reply.find("unknown subcommand") != std::string::npos ||
                                  result.reply.find("Unknown subcommand") != std::string::npos);
}

void add_unique(std::vector<config::Endpoint>& out, const config::Endpoint& e) {
  const bool known = std::any_of(out.begin(), out.end(), [&e](const config::Endpoint& o) {
    return o.port == e.port && o.host == e.host;
  });
  if (!known) out.push_back(e);
}

}  // namespace

std::string_view refresh_reason_name(RefreshReason reason) {
  switch (reason) {
    case RefreshReason::startup:
      return "startup";
    case RefreshReason::periodic:
      return "periodic";
    case RefreshReason::moved:
      return "moved";
    case RefreshReason::connection:
      return "connection";
    case RefreshReason::clusterdown:
      return "clusterdown";
  }
  return "unknown";
}

Topology::Topology(const asio::any_io_executor& executor, const config::UpstreamSettings& settings)
    : executor_(executor), settings_(settings), periodic_timer_(executor), pace_timer_(executor) {
  if (settings_.read_from != config::ReadFrom::primary) replicas_ = std::make_shared<ReplicaView>();
}

Topology::~Topology() = default;

void Topology::start() {
  request_refresh(RefreshReason::startup);
  if (replicas_) {
    replica_poller_ =
        std::make_shared<ClusterReplicaPoller>(executor_, settings_, weak_from_this(), replicas_);
    replica_poller_->start();
  }
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->periodic(); }, asio::detached);
}

void Topology::stop() {
  asio::post(executor_, [self = shared_from_this()] {
    self->stopped_ = true;
    if (self->replica_poller_) self->replica_poller_->stop();
    self->periodic_timer_.cancel();
    self->pace_timer_.cancel();
  });
}

std::shared_ptr<const SlotMap> Topology::current() const {
  std::lock_guard lock(mutex_);
  return map_;
}

void Topology::publish(SlotMap map) {
  auto fresh = std::make_shared<const SlotMap>(std::move(map));
  {
    std::lock_guard lock(mutex_);
    map_ = std::move(fresh);
  }
  version_.fetch_add(1, std::memory_order_acq_rel);
}

void Topology::request_refresh(RefreshReason reason) {
  asio::post(executor_, [self = shared_from_this(), reason] {
    if (self->stopped_) return;
    if (!self->wanted_) self->wanted_reason_ = reason;
    self->wanted_ = true;
    if (self->running_) return;  // the loop sees `wanted_` when the current round ends
    self->running_ = true;
    asio::co_spawn(
        self->executor_, [self] { return self->refresh_loop(); }, asio::detached);
  });
}

awaitable<void> Topology::refresh_loop() {
  auto self = shared_from_this();
  while (wanted_ && !stopped_) {
    const auto due = last_start_ + kMinInterval;
    if (std::chrono::steady_clock::now() < due) {
      pace_timer_.expires_at(due);
      boost::system::error_code ignored;
      co_await pace_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      if (stopped_) break;
    }
    wanted_ = false;
    last_start_ = std::chrono::steady_clock::now();
    refreshes_[static_cast<std::size_t>(wanted_reason_)].fetch_add(1, std::memory_order_relaxed);
    counters_.refreshes.fetch_add(1, std::memory_order_relaxed);
    if (!co_await refresh_once()) {
      counters_.refresh_failures.fetch_add(1, std::memory_order_relaxed);
      // Until some node answers, keep trying at the pace above: commands fail fast meanwhile.
      if (!current() || wanted_reason_ != RefreshReason::periodic) {
        wanted_ = true;
        wanted_reason_ = RefreshReason::connection;
      }
    }
  }
  running_ = false;
}

awaitable<void> Topology::periodic() {
  auto self = shared_from_this();
  while (!stopped_) {
    periodic_timer_.expires_after(settings_.topology_refresh);
    boost::system::error_code ec;
    co_await periodic_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) break;
    request_refresh(RefreshReason::periodic);
  }
}

awaitable<bool> Topology::refresh_once() {
  // Nodes of the current map first (primaries, then replicas), then the seeds: start-up works
  // with some seeds down, and a failed-over cluster is still found when every seed is gone.
  std::vector<config::Endpoint> candidates;
  if (const auto known = current()) {
    for (int primary : known->primaries) add_unique(candidates, known->nodes[primary].endpoint);
    for (const auto& node : known->nodes) add_unique(candidates, node.endpoint);
  }
  for (const auto& seed : settings_.servers) add_unique(candidates, seed);
  std::string failure;
  for (const auto& node : candidates) {
    if (stopped_) co_return false;
    auto parsed = co_await ask(node);
    if (!parsed.map) {
      spdlog::warn("cluster topology from {}:{}: {}", node.host, node.port, parsed.error);
      failure = fmt::format("{}:{}: {}", node.host, node.port, parsed.error);
      continue;
    }
    const auto previous = current();
    const bool changed = !previous || !previous->same_owners(*parsed.map) ||
                         previous->nodes.size() != parsed.map->nodes.size();
    if (changed) {
      spdlog::info("cluster topology from {}:{}: {} primaries, {} nodes, {} slots served",
                   node.host, node.port, parsed.map->primaries.size(), parsed.map->nodes.size(),
                   parsed.map->slots_covered());
    }
    node_gauges_.node(node).topology_answers.fetch_add(1, std::memory_order_relaxed);
    publish(std::move(*parsed.map));
    std::lock_guard lock(mutex_);
    last_failure_.clear();
    co_return true;
  }
  std::lock_guard lock(mutex_);
  last_failure_ = std::move(failure);
  co_return false;
}

std::string Topology::last_failure() const {
  std::lock_guard lock(mutex_);
  return last_failure_;
}

awaitable<SlotMapParse> Topology::ask(const config::Endpoint& node) {
  auto options = node_connection_options(settings_, node, false);
  auto connection = std::make_shared<Connection>(executor_, std::move(options), nullptr);
  connection->start();
  const std::string_view shards[] = {"CLUSTER", "SHARDS"};
  auto result = co_await call(*connection, shards);
  bool from_slots = false;
  if (unknown_subcommand(result)) {  // Redis before 7
    const std::string_view slots[] = {"CLUSTER", "SLOTS"};
    result = co_await call(*connection, slots);
    from_slots = true;
  }
  connection->close();
  if (!result.ok()) {
    // A refused AUTH or TLS handshake says more than the generic "upstream unavailable".
    co_return SlotMapParse{std::nullopt,
                           connection->refusal().empty() ? result.error : connection->refusal()};
  }
  co_return from_slots ? parse_cluster_slots(result.reply, node.host)
                       : parse_cluster_shards(result.reply, node.host, settings_.tls.enabled);
}

}  // namespace corral::upstream
