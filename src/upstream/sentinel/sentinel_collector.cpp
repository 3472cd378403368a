// The Sentinel collector: the status's atomics formatted as Prometheus families.
#include <string>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "metrics/metric_families.hpp"
#include "upstream/sentinel/sentinel_status.hpp"

namespace corral::upstream {

namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

class SentinelMetrics final : public prometheus::Collectable {
 public:
  explicit SentinelMetrics(std::shared_ptr<const SentinelStatus> status)
      : status_(std::move(status)) {}

  std::vector<MetricFamily> Collect() const override {
    std::vector<MetricFamily> out;
    const auto& s = *status_;
    add(out, "corral_sentinel_primary_known",
        "1 once a Sentinel named a primary that ROLE confirmed.", MetricType::Gauge,
        s.primary_known.load() ? 1 : 0);
    auto primary =
        metrics::make_family("corral_sentinel_primary",
                             "1 for the primary Corral sends commands to now.", MetricType::Gauge);
    if (const auto address = s.primary(); !address.empty()) {
      primary.metric.push_back(metrics::make_sample({{"address", address}}, primary.type, 1));
    }
    out.push_back(std::move(primary));
    add(out, "corral_sentinel_sentinels_subscribed",
        "Sentinels whose failover events Corral is subscribed to now.", MetricType::Gauge,
        s.sentinels_subscribed.load());
    add(out, "corral_sentinel_failover_holding",
        "1 while commands wait for a failover that a Sentinel announced to end.", MetricType::Gauge,
        s.holding.load() ? 1 : 0);
    add(out, "corral_sentinel_primary_switches_total",
        "Times Corral moved its connections to a new primary.", MetricType::Counter,
        static_cast<double>(s.primary_switches.load()));
    add(out, "corral_sentinel_held_commands_total",
        "Commands that waited for an announced failover before being sent.", MetricType::Counter,
        static_cast<double>(s.held_commands.load()));
    add(out, "corral_sentinel_hold_expired_total",
        "Held commands answered with an error because failover_hold passed first.",
        MetricType::Counter, static_cast<double>(s.hold_expired.load()));
    add(out, "corral_sentinel_session_links_closed_total",
        "Client-owned links (MULTI, blocking, pub/sub) closed because the primary changed.",
        MetricType::Counter, static_cast<double>(s.session_links_closed.load()));
    add(out, "corral_sentinel_replicas_usable",
        "Replicas that reads may go to (read_from): up, linked, within max_replica_lag.",
        MetricType::Gauge, s.replicas_usable.load());
    auto lags = metrics::make_family(
        "corral_sentinel_replica_lag_bytes",
        "How far each replica's replication offset is behind the primary's, as last polled.",
        MetricType::Gauge);
    for (const auto& [address, lag] : s.replica_lags()) {
      lags.metric.push_back(
          metrics::make_sample({{"address", address}}, lags.type, static_cast<double>(lag)));
    }
    out.push_back(std::move(lags));
    out.push_back(reads_family(s));
    return out;
  }

 private:
  // The read split of read_from: always all four series, so that a rate of 0 is a 0 and not a gap.
  static MetricFamily reads_family(const SentinelStatus& s) {
    auto reads = metrics::make_family(
        "corral_sentinel_reads_total",
        "Clients' reads with read_from set, by where they went (role) and why (reason).",
        MetricType::Counter);
    const auto counts = s.reads();
    const std::pair<const char*, const char*> labels[kReadRoutes] = {
        {"replica", "usable_replica"},
        {"primary", "own_writes"},
        {"primary", "no_usable_replica"},
        {"none", "no_usable_replica"},
    };
    for (std::size_t i = 0; i < kReadRoutes; ++i) {
      reads.metric.push_back(
          metrics::make_sample({{"role", labels[i].first}, {"reason", labels[i].second}},
                               reads.type, static_cast<double>(counts[i])));
    }
    return reads;
  }

  static void add(std::vector<MetricFamily>& out, std::string name, std::string help,
                  MetricType type, double value) {
    auto f = metrics::make_family(std::move(name), std::move(help), type);
    f.metric.push_back(metrics::make_sample({}, type, value));
    out.push_back(std::move(f));
  }

  std::shared_ptr<const SentinelStatus> status_;
};

}  // namespace

std::shared_ptr<prometheus::Collectable> make_sentinel_metrics(
    std::shared_ptr<const SentinelStatus> status) {
  return std::make_shared<SentinelMetrics>(std::move(status));
}

}  // namespace corral::upstream
