// Wiring of the proxy: what runs on which io thread, and what a SIGHUP reload touches.
#include "app.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "cache/clock.hpp"
#include "metrics/slowlog_metrics.hpp"
#include "proxy/commands/command_learner.hpp"
#include "proxy/dispatcher.hpp"
#include "proxy/idle_reaper.hpp"
#include "proxy/local/acl_verdicts.hpp"
#include "proxy/refusal_audit.hpp"
#include "slowlog/slow_log.hpp"
#include "stampede/hot/hot_cache.hpp"
#include "stampede/hot/hot_key_window.hpp"
#include "stampede/hot/hot_keys_collector.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "stampede/read/read_through.hpp"
#include "stampede/tracking/cluster_invalidation.hpp"
#include "stampede/tracking/invalidation_listener.hpp"
#include "stampede/versioned/pointer_watch.hpp"
#include "upstream/cluster/cluster_collector.hpp"
#include "upstream/cluster/cluster_pool.hpp"
#include "upstream/cluster/cluster_ready_probe.hpp"
#include "upstream/keyed_caller.hpp"
#include "upstream/sentinel/replica_poller.hpp"
#include "upstream/sentinel/replica_reads.hpp"
#include "upstream/sentinel/sentinel_links.hpp"
#include "upstream/sentinel/sentinel_status.hpp"
#include "upstream/sentinel/sentinel_watch.hpp"
#include "upstream/thread_upstream.hpp"
#include "upstream/upstream_switch.hpp"

namespace corral {

namespace asio = boost::asio;

// One io thread's share of the proxy. Members are built in order: the dispatcher uses the engine,
// which uses the upstream switch, which forwards to the thread's upstream of the configured kind.
struct App::ThreadParts {
  // `topology` (a Redis Cluster upstream) or `sentinel` (a Sentinel-managed primary): see
  // upstream::ThreadUpstream.
  ThreadParts(const config::Settings& settings, asio::io_context& io,
              metrics::ThreadStats& thread_stats, metrics::ProcessInfo& info,
              stampede::CacheRuntime& cache, std::shared_ptr<upstream::Topology> topology,
              std::shared_ptr<upstream::SentinelStatus> sentinel,
              std::shared_ptr<const upstream::ReplicaView> replicas)
      : stats(thread_stats),
        upstream_parts(std::make_shared<upstream::ThreadUpstream>(
            io.get_executor(), settings.upstream, stats, info, std::move(topology),
            std::move(sentinel), std::move(replicas))),
        upstream(upstream::ThreadUpstream::upstream_of(upstream_parts)),
        // Admin conversations (ROLLOVER, PURGE, tag purges, pointer reads) must not run twice:
        // no retry after a lost connection.
        keyed_caller(upstream.keyed_caller({cache.database(), 0})),
        read_through(io.get_executor(), cache, upstream),
        dispatcher(settings, upstream, info, &read_through, &cache) {
    dispatcher.set_keyed_caller(keyed_caller);
  }

  metrics::ThreadStats& stats;
  // The upstream in use (a reload replaces it; the switch keeps the previous one while it drains).
  std::shared_ptr<upstream::ThreadUpstream> upstream_parts;
  upstream::UpstreamSwitch upstream;
  std::shared_ptr<upstream::KeyedCaller> keyed_caller;
  stampede::ReadThrough read_through;
  proxy::Dispatcher dispatcher;
};

// Process state for alerts, read at scrape time: upstream readiness (what /readyz answers) and
// the tracking connection.
class App::StatusCollector final : public prometheus::Collectable {
 public:
  // The tracking side: the one listener, or on a cluster the listeners of every primary.
  struct Tracking {
    std::function<bool()> connected;
    std::function<bool()> wanted;
    std::function<std::uint64_t()> reconnects;
  };

  StatusCollector(const metrics::ProcessInfo& info, const UpstreamReloads& reloads,
                  Tracking tracking, std::function<std::string()> not_ready_reason,
                  std::shared_ptr<upstream::ClusterReadyProbe> cluster_probe)
      : info_(info),
        reloads_(reloads),
        tracking_(std::move(tracking)),
        not_ready_reason_(std::move(not_ready_reason)),
        cluster_probe_(std::move(cluster_probe)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const int stalled = info_.stalled_upstreams.load(std::memory_order_relaxed);
    std::vector<prometheus::MetricFamily> out;
    gauge(out, "corral_upstream_ready",
          "1 when Corral can serve what the upstream serves (what /readyz reports), else 0.",
          not_ready_reason_().empty() ? 1 : 0);
    prometheus::MetricFamily auth_failures;
    auth_failures.name = "corral_auth_failures_total";
    auth_failures.help = "AUTH (and HELLO ... AUTH) attempts refused.";
    auth_failures.type = prometheus::MetricType::Counter;
    auth_failures.metric.emplace_back();
    auth_failures.metric.back().counter.value =
        static_cast<double>(info_.auth_failures.load(std::memory_order_relaxed));
    out.push_back(std::move(auth_failures));
    if (cluster_probe_) {
      gauge(out, "corral_cluster_slots_ready",
            "Slots whose primary answers this Corral's PINGs (16384 when every slot is served).",
            static_cast<double>(cluster_probe_->slots_ready()));
    }
    gauge(out, "corral_upstream_user_pools",
          "Connection pools open for clients' upstream ACL users (AUTH user pass), all io threads.",
          info_.user_pools.load(std::memory_order_relaxed));
    gauge(out, "corral_upstream_user_refused_commands",
          "Commands Corral refuses that its own upstream user may run (ACL DRYRUN at start-up and "
          "reload; a script can call them); -1 when the upstream could not be asked.",
          info_.refused_but_runnable.load(std::memory_order_relaxed));
    gauge(out, "corral_upstream_stalled_threads",
          "Io threads whose upstream did not answer the readiness PING in time.", stalled);
    gauge(out, "corral_tracking_connected",
          "1 while the CLIENT TRACKING connection (invalidations of redis-origin policies) is up.",
          tracking_.connected() ? 1 : 0);
    gauge(
        out, "corral_tracking_wanted",
        "1 when some redis-origin policy has prefixes to track, or hot_keys.cache is on (tracking "
        "should be up).",
        tracking_.wanted() ? 1 : 0);
    prometheus::MetricFamily reconnects;
    reconnects.name = "corral_tracking_reconnects_total";
    reconnects.help = "Tracking connections that ended and were started again.";
    reconnects.type = prometheus::MetricType::Counter;
    reconnects.metric.emplace_back();
    reconnects.metric.back().counter.value = static_cast<double>(tracking_.reconnects());
    out.push_back(std::move(reconnects));
    counter(out, "corral_upstream_switches_total",
            "Reloads that replaced the upstream (new requests went to the new one).",
            reloads_.switched.load(std::memory_order_relaxed));
    counter(out, "corral_upstream_reload_failures_total",
            "Reloads whose upstream change was not applied (refused, or the new upstream did not "
            "answer a PING): the running upstream was kept.",
            reloads_.failed.load(std::memory_order_relaxed));
    return out;
  }

 private:
  static void gauge(std::vector<prometheus::MetricFamily>& out, std::string name, std::string help,
                    double value) {
    prometheus::MetricFamily f;
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = prometheus::MetricType::Gauge;
    f.metric.emplace_back();
    f.metric.back().gauge.value = value;
    out.push_back(std::move(f));
  }

  static void counter(std::vector<prometheus::MetricFamily>& out, std::string name,
                      std::string help, std::uint64_t value) {
    prometheus::MetricFamily f;
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = prometheus::MetricType::Counter;
    f.metric.emplace_back();
    f.metric.back().counter.value = static_cast<double>(value);
    out.push_back(std::move(f));
  }

  const metrics::ProcessInfo& info_;
  const UpstreamReloads& reloads_;
  Tracking tracking_;
  std::function<std::string()> not_ready_reason_;
  std::shared_ptr<upstream::ClusterReadyProbe> cluster_probe_;
};

App::App(const config::Settings& settings, metrics::Metrics& metrics)
    : settings_(settings), server_(settings, metrics, info_) {
  running_upstream_ = settings_.upstream;
  cache_ = std::make_unique<stampede::CacheRuntime>(settings_, cache::SystemClock::instance(),
                                                    metrics.registry());
  metrics.add_collectable(cache_->collectable());
  if (settings_.upstream.cluster) {
    topology_ =
        std::make_shared<upstream::Topology>(server_.io(0).get_executor(), settings_.upstream);
    cluster_metrics_ = upstream::make_cluster_metrics(topology_);
    metrics.add_collectable(cluster_metrics_);
  }
  if (settings_.upstream.sentinel) {
    sentinel_status_ = std::make_shared<upstream::SentinelStatus>();
    sentinel_metrics_ = upstream::make_sentinel_metrics(sentinel_status_);
    metrics.add_collectable(sentinel_metrics_);
    if (settings_.upstream.read_from != config::ReadFrom::primary) {
      replica_view_ = std::make_shared<upstream::ReplicaView>();
    }
  }
  if (settings_.slowlog.enabled) {
    slowlog_ = std::make_unique<slowlog::SlowLog>(static_cast<std::size_t>(server_.threads()),
                                                  settings_.slowlog.max_len);
    server_.set_slowlog(*slowlog_);
    slowlog_metrics_ = metrics::make_slowlog_metrics(*slowlog_);
    metrics.add_collectable(slowlog_metrics_);
  }
  if (settings_.hot_keys.detect) {
    const auto& hot = settings_.hot_keys;
    hot_keys_ = std::make_unique<stampede::HotKeys>(
        static_cast<std::size_t>(server_.threads()),
        stampede::HotKeyOptions{hot.capacity, hot.max_key_bytes,
                                static_cast<std::uint32_t>(hot.sample)});
    std::function<void()> choose_hot;
    if (auto* hot_cache = cache_->hot()) {
      choose_hot = [hot_cache, &keys = *hot_keys_, &cache = *cache_] {
        hot_cache->choose(keys, *cache.policies());
      };
    }
    hot_key_window_ = std::make_shared<stampede::HotKeyWindow>(
        server_.io(0).get_executor(), *hot_keys_, hot.window, std::move(choose_hot));
    hot_keys_metrics_ = stampede::make_hot_keys_collector(*hot_keys_, cache_->hot());
    metrics.add_collectable(hot_keys_metrics_);
  }
  for (int i = 0; i < server_.threads(); ++i) {
    threads_.push_back(std::make_unique<ThreadParts>(settings_, server_.io(i), metrics.thread(i),
                                                     info_, *cache_, topology_, sentinel_status_,
                                                     replica_view_));
    threads_.back()->dispatcher.set_slowlog(slowlog_.get());
    threads_.back()->dispatcher.set_hot_keys(hot_keys_.get(), static_cast<std::size_t>(i));
    server_.set_handler(i, threads_.back()->dispatcher);
  }
  // The listener lives on the first io thread (started by run()); on_invalidate: refresh
  // refetches through it.
  auto& first = *threads_.front();
  auto refresh = [&first](std::string_view key) { first.read_through.refresh_invalidated(key); };
  StatusCollector::Tracking tracking;
  if (topology_) {
    // Every io thread tracks each primary itself and applies what it reads to its own fills:
    // Redis sends a write's invalidation before the write's reply, so a thread reads it before
    // any later request of its clients for the key, whereas another thread's listener may read
    // it after this thread's fill and drop a fresh copy.
    for (int i = 0; i < server_.threads(); ++i) {
      cluster_tracking_.push_back(std::make_shared<stampede::ClusterInvalidation>(
          server_.io(i).get_executor(), settings_.upstream, topology_, *cache_,
          i == 0 ? refresh : std::function<void(std::string_view)>{}, i));
    }
    const auto all = cluster_tracking_;
    tracking = {
        // Hot-key caching alone is tracked by thread 0's listeners only (see ClusterInvalidation).
        [all] {
          return std::any_of(all.begin(), all.end(), [](const auto& t) { return t->wanted(); }) &&
                 std::all_of(all.begin(), all.end(),
                             [](const auto& t) { return !t->wanted() || t->tracking(); });
        },
        [all] {
          return std::any_of(all.begin(), all.end(), [](const auto& t) { return t->wanted(); });
        },
        [all] {
          std::uint64_t total = 0;
          for (const auto& t : all) total += t->reconnects();
          return total;
        }};
  } else {
    listener_ = std::make_shared<stampede::InvalidationListener>(
        server_.io(0).get_executor(), settings_.upstream, *cache_, refresh);
    tracking = {[l = listener_] { return l->tracking(); }, [l = listener_] { return l->wanted(); },
                [l = listener_] { return l->reconnects(); }};
  }
  std::function<std::string()> not_ready_reason;
  if (topology_) {
    cluster_probe_ = std::make_shared<upstream::ClusterReadyProbe>(
        server_.io(0).get_executor(), *first.upstream_parts->cluster_pool,
        upstream::kReadyProbeInterval, upstream::ready_probe_deadline(settings_.upstream));
    not_ready_reason = [probe = cluster_probe_] { return probe->not_ready_reason(); };
  } else {
    not_ready_reason = [this]() -> std::string {
      if (sentinel_status_ && !sentinel_status_->primary_known.load(std::memory_order_relaxed)) {
        return "no Sentinel has named a primary of " + settings_.upstream.sentinel->master +
               " that ROLE confirms";
      }
      if (info_.ready_upstream_connections.load(std::memory_order_relaxed) == 0) {
        return "no connection to the upstream is ready";
      }
      if (info_.stalled_upstreams.load(std::memory_order_relaxed) != 0) {
        return "the upstream did not answer a PING in time";
      }
      return {};
    };
  }
  server_.set_readiness(not_ready_reason);
  status_ = std::make_shared<StatusCollector>(info_, upstream_reloads_, std::move(tracking),
                                              std::move(not_ready_reason), cluster_probe_);
  metrics.add_collectable(status_);
}

App::~App() = default;

namespace {

bool answers_pong(const upstream::CallResult& result) {
  return result.ok() && result.reply.starts_with("+PONG");
}

}  // namespace

asio::awaitable<void> App::switch_upstream(config::UpstreamSettings fresh, config::Duration drain) {
  if (fresh == running_upstream_) co_return;  // unchanged: nothing rebuilt
  if (auto why = upstream::why_reload_needs_restart(running_upstream_, fresh); !why.empty()) {
    spdlog::error("SIGHUP: {}; keeping the running upstream", why);
    upstream_reloads_.failed.fetch_add(1, std::memory_order_relaxed);
    co_return;
  }
  if (upstream_checking_) {
    spdlog::error(
        "SIGHUP: the previous upstream change is still being checked; this one is not applied "
        "(send SIGHUP again)");
    upstream_reloads_.failed.fetch_add(1, std::memory_order_relaxed);
    co_return;
  }
  // The new upstream must answer before any client request goes to it.
  upstream_checking_ = true;
  auto& first = *threads_.front();
  auto candidate = std::make_shared<upstream::ThreadUpstream>(server_.io(0).get_executor(), fresh,
                                                              first.stats, info_, nullptr, nullptr);
  candidate->start_connections();
  const auto answer =
      co_await candidate->upstream->call_server(std::string(upstream::kPingCommand));
  upstream_checking_ = false;
  const auto& server = fresh.servers.front();
  if (!answers_pong(answer)) {
    spdlog::error(
        "SIGHUP: the new upstream {}:{} did not answer PING ({}); keeping the running one",
        server.host, server.port, answer.ok() ? answer.reply : answer.error);
    upstream_reloads_.failed.fetch_add(1, std::memory_order_relaxed);
    co_return;
  }
  running_upstream_ = fresh;
  if (listener_) listener_->use_upstream(fresh);
  candidate->start_probe();
  install_upstream(0, std::move(candidate), drain);
  for (int i = 1; i < server_.threads(); ++i) {
    asio::post(server_.io(i), [this, i, fresh, drain] {
      auto parts = std::make_shared<upstream::ThreadUpstream>(
          server_.io(i).get_executor(), fresh, threads_[i]->stats, info_, nullptr, nullptr);
      parts->start();
      install_upstream(i, std::move(parts), drain);
    });
  }
  upstream_reloads_.switched.fetch_add(1, std::memory_order_relaxed);
  spdlog::info(
      "SIGHUP: upstream switched to {}:{}; requests already sent finish on the previous one, "
      "client links still on it are closed after {} ms",
      server.host, server.port, drain.count());
}

void App::install_upstream(int thread, std::shared_ptr<upstream::ThreadUpstream> parts,
                           config::Duration drain) {
  auto& parts_here = *threads_[thread];
  parts_here.upstream_parts = parts;
  parts_here.upstream.switch_to(upstream::ThreadUpstream::upstream_of(std::move(parts)));
  // Cached replies of the upstream (redis-origin and fleet policies, hot keys) came from the
  // previous server; an http origin's did not. Dropped after the switch: a fill that starts now
  // reads from the new one. (The tracking listener's move flushes its prefixes too, once its new
  // session tracks; this drop does not wait for that.)
  if (cache_->hot() != nullptr) {
    cache_->invalidate_prefix("", stampede::InvalidationSource::flush);
  } else {
    for (const auto& prefix : stampede::tracked_prefixes(*cache_->policies())) {
      cache_->invalidate_prefix(prefix, stampede::InvalidationSource::flush);
    }
  }
  auto timer = std::make_shared<asio::steady_timer>(server_.io(thread), drain);
  timer->async_wait([timer, &parts_here, generation = parts_here.upstream.generation()](
                        const boost::system::error_code&) {
    const auto closed = parts_here.upstream.retire_previous(generation);
    if (closed != 0) {
      spdlog::warn(
          "upstream switch: {} client link(s) still on the previous upstream at the drain "
          "deadline were closed",
          closed);
    }
  });
}

void App::run() {
  if (topology_) asio::post(server_.io(0), [topology = topology_] { topology->start(); });
  if (cluster_probe_) asio::post(server_.io(0), [probe = cluster_probe_] { probe->start(); });
  auto& first = *threads_.front();
  auto& first_io = server_.io(0);
  // A Sentinel's listener starts once the primary is known (start_sentinel_watch).
  if (listener_ && !sentinel_status_) {
    asio::post(first_io, [listener = listener_] { listener->start(); });
  }
  if (sentinel_status_) start_sentinel_watch();
  if (hot_key_window_) asio::post(first_io, [window = hot_key_window_] { window->start(); });
  for (std::size_t i = 0; i < cluster_tracking_.size(); ++i) {
    asio::post(server_.io(static_cast<int>(i)),
               [tracking = cluster_tracking_[i]] { tracking->start(); });
  }
  // Versioned policies follow their pointer keys from the same thread (kept alive by its timer).
  const auto pointer_watch = std::make_shared<stampede::PointerWatch>(first_io.get_executor(),
                                                                      first.keyed_caller, *cache_);
  asio::post(first_io, [pointer_watch] { pointer_watch->start(); });
  const auto idle_reaper =
      std::make_shared<proxy::IdleReaper>(first_io.get_executor(), settings_.client.idle_timeout);
  asio::post(first_io, [idle_reaper] { idle_reaper->start(); });
  // Commands of a newer or renamed upstream: learned once for the process, on the first thread.
  auto learner = std::make_shared<proxy::CommandLearner>(first_io.get_executor(), first.upstream);
  for (int i = 0; i < server_.threads(); ++i) {
    asio::post(server_.io(i), [parts = threads_[i].get()] { parts->upstream_parts->start(); });
  }
  asio::post(first_io, [learner] { learner->start(); });
  const auto audit = std::make_shared<proxy::RefusalAudit>(first_io.get_executor(), first.upstream,
                                                           info_.refused_but_runnable);
  asio::post(first_io,
             [audit, allowed = settings_.client.allow_commands] { audit->start(allowed); });
  server_.on_reload([this, &first_io, audit, idle_reaper](const config::Settings& fresh) {
    cache_->reload(fresh.policies);
    asio::co_spawn(server_.io(0), switch_upstream(fresh.upstream, fresh.shutdown_timeout),
                   asio::detached);
    for (int i = 0; i < server_.threads(); ++i) {
      asio::post(server_.io(i), [parts = threads_[i].get(), client = fresh.client] {
        parts->dispatcher.apply_client_settings(client);
      });
    }
    asio::post(first_io, [idle_reaper, idle = fresh.client.idle_timeout] {
      idle_reaper->set_idle_timeout(idle);
    });
    // The upstream's users may have changed with the file: learned again from Redis.
    proxy::forget_acl_rules();
    asio::post(first_io, [audit, allowed = fresh.client.allow_commands] { audit->start(allowed); });
    if (listener_) asio::post(first_io, [listener = listener_] { listener->restart(); });
    for (std::size_t i = 0; i < cluster_tracking_.size(); ++i) {
      asio::post(server_.io(static_cast<int>(i)),
                 [tracking = cluster_tracking_[i]] { tracking->restart(); });
    }
  });
  if (sentinel_status_) {
    spdlog::info("upstream: the primary of {} named by {} Sentinels",
                 settings_.upstream.sentinel->master,
                 settings_.upstream.sentinel->addresses.size());
  } else {
    spdlog::info(
        "upstream {} {}:{}{}", topology_ ? "cluster, seed" : "",
        settings_.upstream.servers.front().host, settings_.upstream.servers.front().port,
        topology_ ? fmt::format(" and {} more", settings_.upstream.servers.size() - 1) : "");
  }
  server_.run();
}

void App::start_sentinel_watch() {
  // Each io thread applies what the watch learns to its own links, on its own thread.
  auto on_every_thread = [this](auto apply) {
    for (int i = 0; i < server_.threads(); ++i) {
      asio::post(server_.io(i), [links = threads_[i]->upstream_parts->sentinel_links.get(), apply] {
        apply(*links);
      });
    }
  };
  upstream::SentinelWatch::Handlers handlers;
  handlers.primary_changed = [this, on_every_thread,
                              listener_started = false](const config::Endpoint& primary) mutable {
    on_every_thread([primary](upstream::SentinelLinks& links) { links.use_primary(primary); });
    if (replica_poller_) replica_poller_->use_primary(primary);
    // The watch runs on the listener's thread: the listener moves with the primary.
    if (!listener_) return;
    listener_->serve_from(primary);
    if (!listener_started) {
      listener_started = true;
      listener_->start();
    }
  };
  handlers.failover_starting = [on_every_thread] {
    on_every_thread([](upstream::SentinelLinks& links) { links.hold(); });
  };
  handlers.failover_aborted = [on_every_thread] {
    on_every_thread([](upstream::SentinelLinks& links) { links.release(); });
  };
  handlers.replicas_changed = [this] {
    if (replica_poller_) replica_poller_->relist();
  };
  handlers.primary_reachable = [this] {
    return info_.ready_upstream_connections.load(std::memory_order_relaxed) > 0;
  };
  sentinel_watch_ = std::make_shared<upstream::SentinelWatch>(
      server_.io(0).get_executor(), settings_.upstream, sentinel_status_, std::move(handlers));
  asio::post(server_.io(0), [watch = sentinel_watch_] { watch->start(); });
  if (replica_view_) {
    replica_poller_ = std::make_shared<upstream::ReplicaPoller>(
        server_.io(0).get_executor(), settings_.upstream, replica_view_, sentinel_status_);
    asio::post(server_.io(0), [poller = replica_poller_] { poller->start(); });
  }
}

}  // namespace corral
