// /metrics families of the proxy slowlog: the phases of the requests it recorded, as histograms.
#pragma once

#include <memory>

namespace prometheus {
class Collectable;
}
namespace corral::slowlog {
class SlowLog;
}

namespace corral::metrics {

// corral_slowlog_phase_seconds{phase} and corral_slowlog_entries_total; `log` must outlive it.
std::shared_ptr<prometheus::Collectable> make_slowlog_metrics(const slowlog::SlowLog& log);

}  // namespace corral::metrics
