// The process-wide parts of one upstream by kind, and how they start, stop and report.
#include <utility>

#include "app_upstream.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <prometheus/collectable.h>
#include <boost/asio/post.hpp>

#include "stampede/policy/cache_runtime.hpp"
#include "stampede/tracking/cluster_invalidation.hpp"
#include "stampede/tracking/invalidation_listener.hpp"
#include "upstream/cluster/cluster_collector.hpp"
#include "upstream/cluster/cluster_pool.hpp"
#include "upstream/cluster/cluster_ready_probe.hpp"
#include "upstream/cluster/topology.hpp"
#include "upstream/replica_view.hpp"
#include "upstream/sentinel/replica_poller.hpp"
#include "upstream/sentinel/sentinel_links.hpp"
#include "upstream/sentinel/sentinel_status.hpp"
#include "upstream/sentinel/sentinel_watch.hpp"
#include "upstream/thread_upstream.hpp"

namespace corral {

namespace asio = boost::asio;

UpstreamDeployment::UpstreamDeployment(config::UpstreamSettings settings, Context context,
                                       std::uint64_t epoch, std::string qualifier)
    : settings_(std::move(settings)),
      context_(std::move(context)),
      epoch_(epoch),
      qualifier_(std::move(qualifier)) {
  auto& server = context_.server;
  if (settings_.cluster) {
    topology_ = std::make_shared<upstream::Topology>(server.io(0).get_executor(), settings_);
    kind_metrics_ = upstream::make_cluster_metrics(topology_);
  }
  if (settings_.sentinel) {
    sentinel_status_ = std::make_shared<upstream::SentinelStatus>();
    kind_metrics_ = upstream::make_sentinel_metrics(sentinel_status_);
    if (settings_.read_from != config::ReadFrom::primary) {
      replica_view_ = std::make_shared<upstream::ReplicaView>();
    }
  }
  for (int i = 0; i < server.threads(); ++i) {
    threads_.push_back(std::make_shared<upstream::ThreadUpstream>(
        server.io(i).get_executor(), settings_, context_.metrics.thread(i), context_.info,
        topology_, sentinel_status_, replica_view_));
  }
  if (topology_) {
    // Every io thread tracks each primary itself and applies what it reads to its own fills:
    // Redis sends a write's invalidation before the write's reply, so a thread reads it before
    // any later request of its clients for the key, whereas another thread's listener may read
    // it after this thread's fill and drop a fresh copy.
    for (int i = 0; i < server.threads(); ++i) {
      cluster_tracking_.push_back(std::make_shared<stampede::ClusterInvalidation>(
          server.io(i).get_executor(), settings_, topology_, context_.cache,
          i == 0 ? context_.refresh : std::function<void(std::string_view)>{}, i,
          stampede::HotLinkNaming{epoch_, qualifier_}));
    }
    // Readiness follows every primary of the slot map, PINGed on thread 0's connections.
    const auto& first = threads_.front();
    cluster_probe_ = std::make_shared<upstream::ClusterReadyProbe>(
        server.io(0).get_executor(),
        std::shared_ptr<upstream::ClusterLinks>(first, first->cluster_pool.get()),
        upstream::kReadyProbeInterval, upstream::ready_probe_deadline(settings_));
  } else {
    listener_ = std::make_shared<stampede::InvalidationListener>(
        server.io(0).get_executor(), settings_, context_.cache, context_.refresh, std::nullopt,
        stampede::HotLinkNaming{epoch_, qualifier_});
  }
}

UpstreamDeployment::~UpstreamDeployment() = default;

void UpstreamDeployment::start(bool connect) {
  auto& server = context_.server;
  if (connect) {
    for (int i = 0; i < server.threads(); ++i) {
      asio::post(server.io(i),
                 [parts = threads_[static_cast<std::size_t>(i)]] { parts->start_connections(); });
    }
  }
  if (topology_) {
    asio::post(server.io(0), [topology = topology_, probe = cluster_probe_] {
      topology->start();
      probe->start();
    });
    for (std::size_t i = 0; i < cluster_tracking_.size(); ++i) {
      asio::post(server.io(static_cast<int>(i)),
                 [tracking = cluster_tracking_[i]] { tracking->start(); });
    }
  }
  if (sentinel_status_) {
    // Its listener starts once the primary is known.
    start_sentinel_watch();
  } else if (listener_) {
    asio::post(server.io(0), [self = shared_from_this()] { self->start_listener(); });
  }
}

void UpstreamDeployment::stop() {
  auto& server = context_.server;
  if (topology_) topology_->stop();
  if (cluster_probe_) cluster_probe_->stop();
  for (std::size_t i = 0; i < cluster_tracking_.size(); ++i) {
    asio::post(server.io(static_cast<int>(i)),
               [tracking = cluster_tracking_[i]] { tracking->stop(); });
  }
  // A Sentinel's listener starts only once a primary is known.
  if (listener_started_) listener_->stop();
  if (sentinel_watch_) sentinel_watch_->stop();
  if (replica_poller_) replica_poller_->stop();
  // Released on their own threads: a candidate that was never used holds the only reference.
  for (int i = 0; i < server.threads(); ++i) {
    asio::post(server.io(i), [parts = std::move(threads_[static_cast<std::size_t>(i)])] {});
  }
}

std::string UpstreamDeployment::own_not_ready_reason() const {
  if (cluster_probe_) return cluster_probe_->not_ready_reason();
  if (sentinel_status_ && !sentinel_status_->primary_known.load(std::memory_order_relaxed)) {
    return "no Sentinel has named a primary of " + settings_.sentinel->master +
           " that ROLE confirms";
  }
  return {};
}

std::string UpstreamDeployment::not_ready_reason() const {
  if (auto own = own_not_ready_reason(); !own.empty() || cluster_probe_) return own;
  // One server: every thread's connections and readiness PINGs count (process-wide counters).
  if (context_.info.ready_upstream_connections.load(std::memory_order_relaxed) == 0) {
    return "no connection to the upstream is ready";
  }
  if (context_.info.stalled_upstreams.load(std::memory_order_relaxed) != 0) {
    return "the upstream did not answer a PING in time";
  }
  return {};
}

bool UpstreamDeployment::tracking_live() const {
  if (listener_) return listener_->tracking();
  // Hot-key caching alone is tracked by thread 0's listeners only (see ClusterInvalidation).
  const auto& all = cluster_tracking_;
  return tracking_wanted() && std::all_of(all.begin(), all.end(), [](const auto& t) {
           return !t->wanted() || t->tracking();
         });
}

bool UpstreamDeployment::tracking_wanted() const {
  if (listener_) return listener_->wanted();
  return std::any_of(cluster_tracking_.begin(), cluster_tracking_.end(),
                     [](const auto& t) { return t->wanted(); });
}

std::uint64_t UpstreamDeployment::tracking_reconnects() const {
  if (listener_) return listener_->reconnects();
  std::uint64_t total = 0;
  for (const auto& t : cluster_tracking_) total += t->reconnects();
  return total;
}

void UpstreamDeployment::restart_tracking() {
  auto& server = context_.server;
  if (listener_) asio::post(server.io(0), [listener = listener_] { listener->restart(); });
  for (std::size_t i = 0; i < cluster_tracking_.size(); ++i) {
    asio::post(server.io(static_cast<int>(i)),
               [tracking = cluster_tracking_[i]] { tracking->restart(); });
  }
}

std::vector<prometheus::MetricFamily> UpstreamDeployment::collect_metrics() const {
  std::vector<prometheus::MetricFamily> out;
  if (kind_metrics_) out = kind_metrics_->Collect();
  if (cluster_probe_) {
    prometheus::MetricFamily slots;
    slots.name = "corral_cluster_slots_ready";
    slots.help =
        "Slots whose primary answers this Corral's PINGs (16384 when every slot is served).";
    slots.type = prometheus::MetricType::Gauge;
    slots.metric.emplace_back();
    slots.metric.back().gauge.value = static_cast<double>(cluster_probe_->slots_ready());
    out.push_back(std::move(slots));
  }
  return out;
}

std::string UpstreamDeployment::describe() const {
  if (settings_.sentinel) {
    return fmt::format("the primary of {} named by {} Sentinels", settings_.sentinel->master,
                       settings_.sentinel->addresses.size());
  }
  const auto& first = settings_.servers.front();
  if (settings_.cluster) {
    return fmt::format("cluster, seed {}:{} and {} more", first.host, first.port,
                       settings_.servers.size() - 1);
  }
  return fmt::format("{}:{}", first.host, first.port);
}

void UpstreamDeployment::start_listener() {
  if (std::exchange(listener_started_, true)) return;
  listener_->start();
}

template <typename Apply>
void UpstreamDeployment::on_every_sentinel_thread(Apply apply) {
  auto& server = context_.server;
  for (int i = 0; i < server.threads(); ++i) {
    // Weakly: a thread's links go with its upstream once a reload retired it.
    std::weak_ptr<upstream::ThreadUpstream> parts = threads_[static_cast<std::size_t>(i)];
    asio::post(server.io(i), [parts, apply] {
      if (auto held = parts.lock()) apply(*held->sentinel_links);
    });
  }
}

void UpstreamDeployment::start_sentinel_watch() {
  upstream::SentinelWatch::Handlers handlers;
  std::weak_ptr<UpstreamDeployment> weak = weak_from_this();
  handlers.primary_changed = [weak](const config::Endpoint& primary) {
    auto self = weak.lock();
    if (!self) return;
    self->on_every_sentinel_thread(
        [primary](upstream::SentinelLinks& links) { links.use_primary(primary); });
    if (self->replica_poller_) self->replica_poller_->use_primary(primary);
    // The watch runs on the listener's thread: the listener moves with the primary.
    self->listener_->serve_from(primary);
    self->start_listener();
  };
  handlers.failover_starting = [weak] {
    if (auto self = weak.lock()) {
      self->on_every_sentinel_thread([](upstream::SentinelLinks& links) { links.hold(); });
    }
  };
  handlers.failover_aborted = [weak] {
    if (auto self = weak.lock()) {
      self->on_every_sentinel_thread([](upstream::SentinelLinks& links) { links.release(); });
    }
  };
  handlers.replicas_changed = [weak] {
    if (auto self = weak.lock(); self && self->replica_poller_) self->replica_poller_->relist();
  };
  handlers.primary_reachable = [&info = context_.info] {
    return info.ready_upstream_connections.load(std::memory_order_relaxed) > 0;
  };
  auto& first_io = context_.server.io(0);
  sentinel_watch_ = std::make_shared<upstream::SentinelWatch>(
      first_io.get_executor(), settings_, sentinel_status_, std::move(handlers));
  asio::post(first_io, [watch = sentinel_watch_] { watch->start(); });
  if (replica_view_) {
    replica_poller_ = std::make_shared<upstream::ReplicaPoller>(first_io.get_executor(), settings_,
                                                                replica_view_, sentinel_status_);
    asio::post(first_io, [poller = replica_poller_] { poller->start(); });
  }
}

}  // namespace corral
