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
    return out;
  }

 private:
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
