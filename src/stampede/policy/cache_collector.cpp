// Builds the caching layer's metric families from the relaxed counters at scrape time, so the
// data path never touches a prometheus object.
#include "stampede/policy/cache_collector.hpp"

#include <chrono>
#include <limits>
#include <string>

#include "metrics/metric_families.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "stampede/policy/policy_runtime.hpp"

namespace corral::stampede {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

using metrics::make_family;
using metrics::make_sample;

ClientMetric histogram(std::vector<ClientMetric::Label> labels,
                       const DurationHistogram::Snapshot& snapshot) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.histogram.sample_count = snapshot.count;
  metric.histogram.sample_sum = snapshot.sum_seconds;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < snapshot.buckets.size(); ++i) {
    cumulative += snapshot.buckets[i];
    const double bound = i < DurationHistogram::kBounds.size()
                             ? DurationHistogram::kBounds[i]
                             : std::numeric_limits<double>::infinity();
    metric.histogram.bucket.push_back({cumulative, bound});
  }
  return metric;
}

// One family per metric, filled policy by policy.
struct Families {
  MetricFamily lookups =
      make_family("corral_cache_lookups_total", "Cached-read lookups by policy and outcome.",
                  MetricType::Counter);
  MetricFamily early =
      make_family("corral_cache_early_refreshes_total",
                  "Background refreshes started early by XFetch.", MetricType::Counter);
  MetricFamily background =
      make_family("corral_cache_background_refreshes_total",
                  "Background refreshes started (XFetch or grace).", MetricType::Counter);
  MetricFamily background_seconds =
      make_family("corral_cache_background_refresh_duration_seconds",
                  "Duration of background refreshes in seconds.", MetricType::Histogram);
  MetricFamily origin_requests = make_family("corral_origin_requests_total",
                                             "Requests made to the origin.", MetricType::Counter);
  MetricFamily origin_errors = make_family(
      "corral_origin_errors_total", "Origin requests that failed (unavailable, lost, timed out).",
      MetricType::Counter);
  MetricFamily origin_seconds =
      make_family("corral_origin_request_duration_seconds", "Origin request duration in seconds.",
                  MetricType::Histogram);
  MetricFamily origin_in_flight = make_family("corral_origin_requests_in_flight",
                                              "Origin requests in flight.", MetricType::Gauge);
  MetricFamily queue_depth = make_family(
      "corral_origin_queue_depth", "Origin fetches waiting for a slot of max_origin_concurrency.",
      MetricType::Gauge);
  MetricFamily queue_seconds = make_family(
      "corral_origin_queue_wait_seconds",
      "Time fetches that were queued waited for an origin slot, in seconds (fetches that found "
      "a free slot are not observed).",
      MetricType::Histogram);
  MetricFamily queue_rejections = make_family(
      "corral_origin_queue_rejections_total",
      "Origin fetches turned away by reason: full (max_origin_queue reached) or timeout "
      "(origin_queue_timeout passed in the queue); their waiters get on_overflow.",
      MetricType::Counter);
  MetricFamily revalidations =
      make_family("corral_origin_revalidations_total",
                  "Conditional requests to an HTTP origin (If-None-Match / If-Modified-Since) by "
                  "result: not_modified (a 304 renewed the stored copy) or modified (a new body).",
                  MetricType::Counter);
  MetricFamily blocked = make_family(
      "corral_stampede_blocked_total",
      "Requests that did not reach the origin because a fetch of the key was in flight.",
      MetricType::Counter);
  MetricFamily overflowed =
      make_family("corral_cache_waiters_overflowed_total",
                  "Requests answered by on_overflow without a fetch: the key's waiters were at "
                  "max_waiters, or the origin queue turned their fetch away.",
                  MetricType::Counter);
  MetricFamily timed_out = make_family(
      "corral_cache_waiters_timed_out_total",
      "Requests that stopped waiting for a fetch after wait_timeout.", MetricType::Counter);
  MetricFamily breaker =
      make_family("corral_circuit_breaker_state",
                  "Origin circuit breaker: 0 closed, 1 open, 2 half-open.", MetricType::Gauge);
  MetricFamily locks = make_family("corral_fleet_locks_total",
                                   "Fleet refresh lock attempts by result (acquired, contended).",
                                   MetricType::Counter);
  MetricFamily fenced =
      make_family("corral_fleet_writes_fenced_total",
                  "Fleet refresh writes refused because the lock had passed to another process.",
                  MetricType::Counter);
  MetricFamily fallbacks =
      make_family("corral_version_fallbacks_total",
                  "Versioned reads answered from the previous version (nil in the current one).",
                  MetricType::Counter);
  MetricFamily stale_serves = make_family(
      "corral_cache_stale_serves_total",
      "Copies served past their ttl, by reason: grace (a refresh is on its way) or "
      "stale_if_error (past grace: the origin failed, is backed off or its breaker is open, "
      "or the wait gave up).",
      MetricType::Counter);
  MetricFamily version_reads = make_family(
      "corral_version_reads_total",
      "Versioned reads by the version they were resolved to (the last few versions only).",
      MetricType::Counter);
  MetricFamily ttl =
      make_family("corral_policy_ttl_seconds",
                  "The policy's configured ttl (origin fetches per ttl window = fetches "
                  "per second x ttl).",
                  MetricType::Gauge);
  MetricFamily invalidations =
      make_family("corral_cache_invalidations_total",
                  "Invalidations by source (write through Corral, tracking, admin, flush).",
                  MetricType::Counter);

  void add(const PolicyStats& stats, const PolicyRuntime& runtime, std::string_view origin,
           const config::PolicySettings& settings) {
    const std::string policy = stats.prefix();
    const auto snapshot = stats.snapshot();
    constexpr auto counter = MetricType::Counter;
    constexpr auto gauge = MetricType::Gauge;
    for (std::size_t i = 0; i < kLookupOutcomes; ++i) {
      const std::string outcome(to_string(static_cast<LookupOutcome>(i)));
      lookups.metric.push_back(make_sample({{"policy", policy}, {"outcome", outcome}}, counter,
                                           static_cast<double>(snapshot.lookups[i])));
    }
    const auto by_policy = [&](MetricFamily& f, MetricType type, std::uint64_t value) {
      f.metric.push_back(make_sample({{"policy", policy}}, type, static_cast<double>(value)));
    };
    by_policy(early, counter, snapshot.early_refreshes);
    by_policy(background, counter, snapshot.background_refreshes);
    background_seconds.metric.push_back(
        histogram({{"policy", policy}}, stats.background_durations()));
    const std::vector<ClientMetric::Label> by_origin{{"policy", policy},
                                                     {"origin", std::string(origin)}};
    origin_requests.metric.push_back(
        make_sample(by_origin, counter, static_cast<double>(snapshot.origin_requests)));
    origin_errors.metric.push_back(
        make_sample(by_origin, counter, static_cast<double>(snapshot.origin_errors)));
    origin_seconds.metric.push_back(histogram(by_origin, stats.origin_durations()));
    if (settings.origin == config::OriginKind::http) {
      const auto counts = stats.revalidations();
      for (std::size_t i = 0; i < kRevalidationResults; ++i) {
        auto labels = by_origin;
        labels.push_back({"result", std::string(to_string(static_cast<RevalidationResult>(i)))});
        revalidations.metric.push_back(
            make_sample(std::move(labels), counter, static_cast<double>(counts[i])));
      }
    }
    by_policy(origin_in_flight, gauge, static_cast<std::uint64_t>(runtime.fetches_in_flight()));
    by_policy(queue_depth, gauge, runtime.fetches_queued());
    queue_seconds.metric.push_back(histogram({{"policy", policy}}, stats.queue_waits()));
    for (std::size_t i = 0; i < kQueueRejections; ++i) {
      const std::string reason(to_string(static_cast<QueueRejection>(i)));
      queue_rejections.metric.push_back(
          make_sample({{"policy", policy}, {"reason", reason}}, counter,
                      static_cast<double>(snapshot.queue_rejections[i])));
    }
    by_policy(blocked, counter, snapshot.stampede_blocked);
    by_policy(overflowed, counter, snapshot.waiters_overflowed);
    by_policy(timed_out, counter, snapshot.waiters_timed_out);
    by_policy(breaker, gauge, static_cast<std::uint64_t>(runtime.breaker()->state()));
    locks.metric.push_back(make_sample({{"policy", policy}, {"result", "acquired"}}, counter,
                                       static_cast<double>(snapshot.locks_acquired)));
    locks.metric.push_back(make_sample({{"policy", policy}, {"result", "contended"}}, counter,
                                       static_cast<double>(snapshot.locks_contended)));
    by_policy(fenced, counter, snapshot.writes_fenced);
    by_policy(fallbacks, counter, snapshot.version_fallbacks);
    const auto stale = stats.stale_serves();
    for (std::size_t i = 0; i < kStaleReasons; ++i) {
      const std::string reason(to_string(static_cast<StaleReason>(i)));
      stale_serves.metric.push_back(make_sample({{"policy", policy}, {"reason", reason}}, counter,
                                                static_cast<double>(stale[i])));
    }
    ttl.metric.push_back(make_sample({{"policy", policy}}, gauge,
                                     std::chrono::duration<double>(settings.ttl).count()));
    if (settings.versioned) {
      for (const auto& slot : stats.version_reads()) {
        if (slot.version == 0) continue;
        version_reads.metric.push_back(
            make_sample({{"policy", policy}, {"version", std::to_string(slot.version)}}, counter,
                        static_cast<double>(slot.reads)));
      }
    }
    for (std::size_t i = 0; i < kInvalidationSources; ++i) {
      const std::string source(to_string(static_cast<InvalidationSource>(i)));
      invalidations.metric.push_back(make_sample({{"policy", policy}, {"source", source}}, counter,
                                                 static_cast<double>(snapshot.invalidations[i])));
    }
  }

  void move_into(std::vector<MetricFamily>& out) {
    for (MetricFamily* f : {&lookups,
                            &early,
                            &background,
                            &background_seconds,
                            &origin_requests,
                            &origin_errors,
                            &origin_seconds,
                            &revalidations,
                            &origin_in_flight,
                            &queue_depth,
                            &queue_seconds,
                            &queue_rejections,
                            &blocked,
                            &overflowed,
                            &timed_out,
                            &breaker,
                            &locks,
                            &fenced,
                            &fallbacks,
                            &stale_serves,
                            &version_reads,
                            &ttl,
                            &invalidations}) {
      // An empty family would print HELP and TYPE lines without samples.
      if (!f->metric.empty()) out.push_back(std::move(*f));
    }
  }
};

}  // namespace

std::vector<MetricFamily> CacheCollector::Collect() const {
  std::vector<MetricFamily> out;
  const auto policies = runtime_.policies();
  Families families;
  for (std::size_t i = 0; i < policies->settings.size(); ++i) {
    const auto origin =
        policies->settings[i].origin == config::OriginKind::redis ? "redis" : "http";
    families.add(*policies->stats[i], *policies->runtimes[i], origin, policies->settings[i]);
  }
  families.move_into(out);

  const auto store = runtime_.store().stats();
  const auto add = [&](std::string name, std::string help, MetricType type, std::uint64_t value) {
    auto f = make_family(std::move(name), std::move(help), type);
    f.metric.push_back(make_sample({}, type, static_cast<double>(value)));
    out.push_back(std::move(f));
  };
  add("corral_cache_entries", "Entries in the cache.", MetricType::Gauge, store.entries);
  add("corral_cache_bytes", "Bytes charged to the cache (keys, values and per-entry overhead).",
      MetricType::Gauge, store.bytes);
  add("corral_cache_max_bytes", "The cache's memory budget (cache.max_memory).", MetricType::Gauge,
      runtime_.store().max_memory());
  add("corral_cache_evictions_total", "Entries evicted to stay within cache.max_memory.",
      MetricType::Counter, store.evictions);
  add("corral_cache_expirations_total", "Entries removed because every window had passed.",
      MetricType::Counter, store.expirations);
  const auto& gaps = runtime_.tracking_gaps();
  add("corral_tracking_gaps",
      "Tracking links down or silent after being live, or not yet live after an upstream switch: "
      "their keys are revalidated on each read.",
      MetricType::Gauge, gaps.size());
  add("corral_tracking_silences_total",
      "Tracking links closed because they answered no PING within upstream.tracking_timeout.",
      MetricType::Counter, gaps.silences());
  return out;
}

}  // namespace corral::stampede
