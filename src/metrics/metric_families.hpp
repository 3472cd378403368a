// Building blocks of hand-written prometheus::Collectable implementations (the cache, cluster and
// process families), so each collector says only what it counts.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

namespace corral::metrics {

inline prometheus::MetricFamily make_family(std::string name, std::string help,
                                            prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

// A counter or gauge sample (by `type`) with its labels.
inline prometheus::ClientMetric make_sample(std::vector<prometheus::ClientMetric::Label> labels,
                                            prometheus::MetricType type, double value) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return metric;
}

}  // namespace corral::metrics
