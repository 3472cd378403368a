// Wiring of the proxy: what runs on which io thread, and what a SIGHUP reload touches.
#include "app.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

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
#include "stampede/tracking/invalidation_listener.hpp"
#include "stampede/tracking/tracking_gaps.hpp"
#include "stampede/versioned/pointer_watch.hpp"
#include "upstream/keyed_caller.hpp"
#include "upstream/thread_upstream.hpp"
#include "upstream/upstream_switch.hpp"

namespace corral {

namespace asio = boost::asio;

// One io thread's share of the proxy. Members are built in order: the dispatcher uses the engine,
// which uses the upstream switch, which forwards to the thread's upstream of the configured kind.
struct App::ThreadParts {
  ThreadParts(const config::Settings& settings, metrics::ThreadStats& thread_stats,
              asio::io_context& io, metrics::ProcessInfo& info, stampede::CacheRuntime& cache,
              std::vector<std::shared_ptr<upstream::ThreadUpstream>> first_parts,
              std::shared_ptr<upstream::Upstream> first_upstream)
      : stats(thread_stats),
        upstream_parts(std::move(first_parts)),
        upstream(std::move(first_upstream)),
        // Admin conversations (ROLLOVER, PURGE, tag purges, pointer reads) must not run twice:
        // no retry after a lost connection.
        keyed_caller(upstream.keyed_caller({0})),
        read_through(io.get_executor(), cache, upstream),
        dispatcher(settings, upstream, info, &read_through, &cache) {
    dispatcher.set_keyed_caller(keyed_caller);
  }

  metrics::ThreadStats& stats;
  // The connections of the upstreams in use (a reload replaces them; the switch keeps the previous
  // ones while they drain).
  std::vector<std::shared_ptr<upstream::ThreadUpstream>> upstream_parts;
  upstream::UpstreamSwitch upstream;
  std::shared_ptr<upstream::KeyedCaller> keyed_caller;
  stampede::ReadThrough read_through;
  proxy::Dispatcher dispatcher;
};

// Process state for alerts, read at scrape time: upstream readiness (what /readyz answers), the
// tracking connection, and the series of the upstream's kind, all of the deployment in use.
class App::StatusCollector final : public prometheus::Collectable {
 public:
  StatusCollector(const metrics::ProcessInfo& info, const UpstreamReloads& reloads,
                  std::function<std::shared_ptr<const UpstreamDeployments>()> deployment)
      : info_(info), reloads_(reloads), deployment_(std::move(deployment)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const auto deployment = deployment_();
    const int stalled = info_.stalled_upstreams.load(std::memory_order_relaxed);
    std::vector<prometheus::MetricFamily> out = deployment->collect_metrics();
    gauge(out, "corral_upstream_ready",
          "1 when Corral can serve what the upstream serves (what /readyz reports), else 0.",
          deployment->not_ready_reason().empty() ? 1 : 0);
    prometheus::MetricFamily auth_failures;
    auth_failures.name = "corral_auth_failures_total";
    auth_failures.help = "AUTH (and HELLO ... AUTH) attempts refused.";
    auth_failures.type = prometheus::MetricType::Counter;
    auth_failures.metric.emplace_back();
    auth_failures.metric.back().counter.value =
        static_cast<double>(info_.auth_failures.load(std::memory_order_relaxed));
    out.push_back(std::move(auth_failures));
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
          deployment->tracking_live() ? 1 : 0);
    gauge(
        out, "corral_tracking_wanted",
        "1 when some redis-origin policy has prefixes to track, or hot_keys.cache is on (tracking "
        "should be up).",
        deployment->tracking_wanted() ? 1 : 0);
    prometheus::MetricFamily reconnects;
    reconnects.name = "corral_tracking_reconnects_total";
    reconnects.help = "Tracking connections that ended and were started again.";
    reconnects.type = prometheus::MetricType::Counter;
    reconnects.metric.emplace_back();
    reconnects.metric.back().counter.value = static_cast<double>(deployment->tracking_reconnects());
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
  std::function<std::shared_ptr<const UpstreamDeployments>()> deployment_;
};

App::App(const config::Settings& settings, metrics::Metrics& metrics)
    : settings_(settings), server_(settings, metrics, info_), metrics_(metrics) {
  cache_ = std::make_unique<stampede::CacheRuntime>(settings_, cache::SystemClock::instance(),
                                                    metrics.registry());
  metrics.add_collectable(cache_->collectable());
  if (settings_.slowlog.enabled) {
    slowlog_ = std::make_unique<slowlog::SlowLog>(
        static_cast<std::size_t>(server_.threads()), settings_.slowlog.max_len,
        std::chrono::duration_cast<std::chrono::microseconds>(settings_.slowlog.threshold).count());
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
  deployment_ =
      std::make_shared<UpstreamDeployments>(UpstreamLayout::of(settings_), deployment_context(), 0);
  for (int i = 0; i < server_.threads(); ++i) {
    threads_.push_back(std::make_unique<ThreadParts>(settings_, metrics.thread(i), server_.io(i),
                                                     info_, *cache_, deployment_->thread_parts(i),
                                                     deployment_->thread_upstream(i)));
    threads_.back()->dispatcher.set_slowlog(slowlog_.get());
    threads_.back()->dispatcher.set_hot_keys(hot_keys_.get(), static_cast<std::size_t>(i));
    server_.set_handler(i, threads_.back()->dispatcher);
  }
  server_.set_readiness([this] { return deployment()->not_ready_reason(); });
  status_ = std::make_shared<StatusCollector>(
      info_, upstream_reloads_,
      [this]() -> std::shared_ptr<const UpstreamDeployments> { return deployment(); });
  metrics.add_collectable(status_);
}

App::~App() = default;

UpstreamDeployment::Context App::deployment_context() {
  // Tracking runs on io thread 0: a refresh refetches through thread 0's engine.
  return {server_, metrics_, info_, *cache_, [this](std::string_view key) {
            threads_.front()->read_through.refresh_invalidated(key);
          }};
}

std::shared_ptr<UpstreamDeployments> App::deployment() const {
  std::lock_guard lock(deployment_mutex_);
  return deployment_;
}

namespace {

bool answers_pong(const upstream::CallResult& result) {
  return result.ok() && result.reply.starts_with("+PONG");
}

// How long a reload waits for a new upstream to find its servers (a slot map whose primaries
// answer, a primary named by the Sentinels) before it keeps the running one.
std::chrono::milliseconds candidate_deadline(const UpstreamLayout& layout) {
  auto deadline = upstream::ready_probe_deadline(layout.upstream);
  for (const auto& [name, settings] : layout.upstreams) {
    deadline = std::max(deadline, upstream::ready_probe_deadline(settings));
  }
  return 2 * deadline + std::chrono::seconds(1);
}

constexpr std::chrono::milliseconds kSwitchPollInterval{50};

// Checks `done` now and every kSwitchPollInterval until it holds or `deadline` passes.
asio::awaitable<void> poll_until(std::function<bool()> done,
                                 std::chrono::steady_clock::time_point deadline) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(kSwitchPollInterval);
    boost::system::error_code ignored;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

}  // namespace

asio::awaitable<std::string> App::check_candidate(UpstreamDeployments& candidate) {
  co_await poll_until([&candidate] { return candidate.own_not_ready_reason().empty(); },
                      std::chrono::steady_clock::now() + candidate_deadline(candidate.layout()));
  if (auto why_not = candidate.own_not_ready_reason(); !why_not.empty()) co_return why_not;
  // Every kind: each new upstream answers a command before any client's goes to it.
  for (const auto& parts : candidate.thread_parts(0)) {
    const auto answer = co_await parts->upstream->call_server(std::string(upstream::kPingCommand));
    if (!answers_pong(answer)) {
      co_return "it did not answer PING (" + (answer.ok() ? answer.reply : answer.error) + ")";
    }
  }
  co_return std::string();
}

asio::awaitable<void> App::switch_upstream(UpstreamLayout fresh, config::Duration drain) {
  const auto running = deployment();
  if (fresh == running->layout()) co_return;  // unchanged: nothing rebuilt
  if (upstream_checking_) {
    spdlog::error(
        "SIGHUP: the previous upstream change is still being checked; this one is not applied "
        "(send SIGHUP again)");
    upstream_reloads_.failed.fetch_add(1, std::memory_order_relaxed);
    co_return;
  }
  upstream_checking_ = true;
  auto candidate = std::make_shared<UpstreamDeployments>(std::move(fresh), deployment_context(),
                                                         running->epoch() + 1);
  candidate->start(true);
  const auto why_not = co_await check_candidate(*candidate);
  upstream_checking_ = false;
  if (!why_not.empty()) {
    spdlog::error("SIGHUP: the new upstream ({}) is not usable: {}; keeping the running one",
                  candidate->describe(), why_not);
    candidate->stop();
    upstream_reloads_.failed.fetch_add(1, std::memory_order_relaxed);
    co_return;
  }
  // Until the new upstream's tracking is live, cached keys of tracked prefixes are revalidated
  // on each read (the fills of the new upstream are not yet covered by its invalidations).
  const auto prefixes = std::make_shared<const std::vector<std::string>>(
      stampede::tracked_prefixes(*cache_->policies()));
  const auto gap =
      prefixes->empty() ? 0 : cache_->tracking_gaps().open([prefixes](std::string_view key) {
        return std::any_of(prefixes->begin(), prefixes->end(),
                           [key](const std::string& p) { return key.starts_with(p); });
      });
  for (int i = 0; i < server_.threads(); ++i) {
    asio::post(server_.io(i),
               [this, i, candidate, drain] { install_upstream(i, *candidate, drain); });
  }
  {
    std::lock_guard lock(deployment_mutex_);
    deployment_ = candidate;
  }
  running->stop();
  upstream_reloads_.switched.fetch_add(1, std::memory_order_relaxed);
  spdlog::info(
      "SIGHUP: upstream switched to {}; requests already sent finish on the previous one, "
      "client links still on it are closed after {} ms",
      candidate->describe(), drain.count());
  if (gap == 0) co_return;
  // The gap closes once the new tracking is live (or this upstream was replaced in turn); what
  // was filled before that is dropped, as when a tracking link comes back.
  co_await poll_until(
      [this, &candidate] { return candidate->tracking_live() || deployment() != candidate; },
      std::chrono::steady_clock::time_point::max());
  for (const auto& prefix : *prefixes) {
    cache_->invalidate_prefix(prefix, stampede::InvalidationSource::flush);
  }
  cache_->tracking_gaps().close(gap);
}

void App::install_upstream(int thread, const UpstreamDeployments& candidate,
                           config::Duration drain) {
  auto& parts_here = *threads_[thread];
  parts_here.upstream_parts = candidate.thread_parts(thread);
  for (const auto& parts : parts_here.upstream_parts) parts->start_probe();
  parts_here.upstream.switch_to(candidate.thread_upstream(thread));
  // Cached replies of the upstream (redis-origin and fleet policies, hot keys) came from the
  // previous server; an http origin's did not. Dropped after the switch: a fill that starts now
  // reads from the new one.
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
  auto& first = *threads_.front();
  auto& first_io = server_.io(0);
  deployment_->start(false);
  for (int i = 0; i < server_.threads(); ++i) {
    asio::post(server_.io(i), [parts = threads_[i].get()] {
      for (const auto& upstream_parts : parts->upstream_parts) upstream_parts->start();
    });
  }
  if (hot_key_window_) asio::post(first_io, [window = hot_key_window_] { window->start(); });
  // Versioned policies follow their pointer keys from the same thread (kept alive by its timer).
  const auto pointer_watch = std::make_shared<stampede::PointerWatch>(first_io.get_executor(),
                                                                      first.keyed_caller, *cache_);
  asio::post(first_io, [pointer_watch] { pointer_watch->start(); });
  const auto idle_reaper =
      std::make_shared<proxy::IdleReaper>(first_io.get_executor(), settings_.client.idle_timeout);
  asio::post(first_io, [idle_reaper] { idle_reaper->start(); });
  // Commands of a newer or renamed upstream: learned once for the process, on the first thread.
  auto learner = std::make_shared<proxy::CommandLearner>(first_io.get_executor(), first.upstream);
  asio::post(first_io, [learner] { learner->start(); });
  const auto audit = std::make_shared<proxy::RefusalAudit>(first_io.get_executor(), first.upstream,
                                                           info_.refused_but_runnable);
  asio::post(first_io,
             [audit, allowed = settings_.client.allow_commands] { audit->start(allowed); });
  server_.on_reload([this, &first_io, audit, idle_reaper](const config::Settings& fresh) {
    cache_->reload(fresh.policies);
    asio::co_spawn(server_.io(0),
                   switch_upstream(UpstreamLayout::of(fresh), fresh.shutdown_timeout),
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
    deployment()->restart_tracking();
  });
  spdlog::info("upstream {}", deployment_->describe());
  server_.run();
}

}  // namespace corral
