// The hot-key collector, read at scrape time from the last window's report.
#include "stampede/hot/hot_keys_collector.hpp"

#include <string>

#include <prometheus/collectable.h>

#include "metrics/metric_families.hpp"
#include "stampede/core/hot_keys.hpp"
#include "stampede/hot/hot_cache.hpp"

namespace corral::stampede {

namespace {
using prometheus::MetricType;

constexpr const char* kKindNames[] = {"read", "write"};
constexpr const char* kEvictionReasons[] = {"cooled", "invalidated", "flushed"};

prometheus::MetricFamily single(const char* name, const char* help, MetricType type, double value) {
  auto family = metrics::make_family(name, help, type);
  family.metric.push_back(metrics::make_sample({}, type, value));
  return family;
}

void collect_cache(const HotCache& cache, std::vector<prometheus::MetricFamily>& out) {
  out.push_back(single("corral_hot_cache_keys",
                       "Keys outside every policy cached as hot now (the last window's choice).",
                       MetricType::Gauge, double(cache.keys()->size())));
  const auto stats = cache.store().stats();
  out.push_back(single("corral_hot_cache_entries", "Replies of hot keys held now.",
                       MetricType::Gauge, double(stats.entries)));
  out.push_back(single("corral_hot_cache_bytes",
                       "Bytes the hot keys' replies are charged (within hot_keys.max_bytes).",
                       MetricType::Gauge, double(stats.bytes)));
  out.push_back(single("corral_hot_cache_hits_total", "Reads of hot keys answered from memory.",
                       MetricType::Counter, double(cache.hits())));
  auto fills = metrics::make_family(
      "corral_hot_cache_fills_total",
      "Reads of hot keys sent to Redis, by whether the reply was stored (not stored: an "
      "invalidation, write or tracking change overtook it).",
      MetricType::Counter);
  for (const bool stored : {true, false}) {
    fills.metric.push_back(metrics::make_sample({{"stored", stored ? "yes" : "no"}},
                                                MetricType::Counter, double(cache.fills(stored))));
  }
  out.push_back(std::move(fills));
  auto evicted = metrics::make_family(
      "corral_hot_cache_evictions_total",
      "Hot keys' replies dropped, by reason (cooled: no longer hot; invalidated: written; "
      "flushed: FLUSHALL or a tracking change; memory: to stay within max_bytes).",
      MetricType::Counter);
  for (std::size_t r = 0; r < kHotEvictionReasons; ++r) {
    evicted.metric.push_back(
        metrics::make_sample({{"reason", kEvictionReasons[r]}}, MetricType::Counter,
                             double(cache.evictions(static_cast<HotEviction>(r)))));
  }
  evicted.metric.push_back(
      metrics::make_sample({{"reason", "memory"}}, MetricType::Counter, double(stats.evictions)));
  out.push_back(std::move(evicted));
}

class HotKeysCollector final : public prometheus::Collectable {
 public:
  HotKeysCollector(const HotKeys& keys, const HotCache* cache) : keys_(keys), cache_(cache) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    auto sampled = metrics::make_family(
        "corral_hotkeys_sampled_total",
        "Requests counted by hot-key detection (one in hot_keys.sample), by kind.",
        MetricType::Counter);
    auto rates = metrics::make_family(
        "corral_hotkey_rate",
        "Estimated requests per second of the hottest keys of the last window, by kind and rank "
        "(1 = hottest); CORRAL.HOTKEYS names them.",
        MetricType::Gauge);
    for (std::size_t k = 0; k < kHotKeyKinds; ++k) {
      const auto kind = static_cast<HotKeyKind>(k);
      sampled.metric.push_back(metrics::make_sample({{"kind", kKindNames[k]}}, MetricType::Counter,
                                                    double(keys_.sampled_total(kind))));
      const auto top = keys_.top(kHotKeyRanks, kind);
      for (std::size_t rank = 0; rank < top.size(); ++rank) {
        rates.metric.push_back(
            metrics::make_sample({{"kind", kKindNames[k]}, {"rank", std::to_string(rank + 1)}},
                                 MetricType::Gauge, top[rank].rate));
      }
    }
    std::vector<prometheus::MetricFamily> out;
    out.push_back(std::move(sampled));
    out.push_back(std::move(rates));
    if (cache_ != nullptr) collect_cache(*cache_, out);
    return out;
  }

 private:
  const HotKeys& keys_;
  const HotCache* cache_;
};
}  // namespace

std::shared_ptr<prometheus::Collectable> make_hot_keys_collector(const HotKeys& keys,
                                                                 const HotCache* cache) {
  return std::make_shared<HotKeysCollector>(keys, cache);
}

}  // namespace corral::stampede
