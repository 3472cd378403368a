// Per-thread counters and their summation into Prometheus families at scrape time, plus the
// process families (start time, CPU, memory, descriptors) that every Prometheus client exports.
#include "metrics/metrics.hpp"

#include "metrics/metric_families.hpp"

#include <prometheus/collectable.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cassert>
#include <filesystem>
#include <fstream>
#include <limits>
#include <utility>

namespace corral::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Bucket bounds in whole nanoseconds, so that placing a sample is an integer comparison.
constexpr std::array<std::uint64_t, kLatencyBuckets.size()> kBucketBoundsNs = [] {
  std::array<std::uint64_t, kLatencyBuckets.size()> ns{};
  for (std::size_t i = 0; i < ns.size(); ++i) {
    // Bounds are positive and std::llround is not constexpr, so +0.5 rounds correctly here.
    ns[i] = static_cast<std::uint64_t>(kLatencyBuckets[i] * 1e9 + 0.5);  // NOLINT
  }
  return ns;
}();
static_assert(kBucketBoundsNs.front() == 50'000 && kBucketBoundsNs.back() == 1'000'000'000);

constexpr std::array<const char*, kCommandResults> kResultNames = {"ok", "error", "refused",
                                                                   "unavailable"};
static_assert(static_cast<std::size_t>(CommandResult::unavailable) + 1 == kCommandResults);

// Single writer: a plain add published with a relaxed store; see the ThreadStats contract.
inline void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

inline std::uint64_t read(const std::atomic<std::uint64_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}

// Index of the first bucket whose upper bound (inclusive, as Prometheus's `le`) holds the sample;
// kLatencyBuckets.size() is the +Inf bucket.
std::size_t bucket_index(std::uint64_t ns) {
  std::size_t i = 0;
  while (i < kBucketBoundsNs.size() && ns > kBucketBoundsNs[i]) ++i;
  return i;
}

MetricFamily single(std::string name, std::string help, MetricType type, double value) {
  MetricFamily f = make_family(std::move(name), std::move(help), type);
  f.metric.push_back(make_sample({}, type, value));
  return f;
}

double unix_now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Process families under their conventional names (no `corral_` prefix), so stock dashboards
// and alerts for "process_*" work unchanged.
void collect_process(double start_time, std::vector<MetricFamily>& out) {
  out.push_back(single("process_start_time_seconds",
                       "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
                       start_time));
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                 static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    out.push_back(single("process_cpu_seconds_total",
                         "Total user and system CPU time spent in seconds.", MetricType::Counter,
                         cpu));
  }
  std::ifstream statm("/proc/self/statm");
  std::uint64_t vsize_pages = 0;
  std::uint64_t rss_pages = 0;
  if (statm >> vsize_pages >> rss_pages) {
    const auto page = static_cast<double>(sysconf(_SC_PAGESIZE));
    out.push_back(single("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                         MetricType::Gauge, static_cast<double>(vsize_pages) * page));
    out.push_back(single("process_resident_memory_bytes", "Resident memory size in bytes.",
                         MetricType::Gauge, static_cast<double>(rss_pages) * page));
  }
  std::error_code ec;
  std::size_t fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) {
    out.push_back(single("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
                         static_cast<double>(fds)));
  }
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    out.push_back(single("process_max_fds", "Maximum number of open file descriptors.",
                         MetricType::Gauge, static_cast<double>(nofile.rlim_cur)));
  }
}

// Sums of the scalar counters over every thread.
struct Totals {
  std::uint64_t clients_connected = 0;
  std::uint64_t clients_disconnected = 0;
  std::uint64_t clients_rejected = 0;
  std::uint64_t client_output_overflow = 0;
  std::uint64_t client_slow_readers = 0;
  std::uint64_t tls_handshake_failures = 0;
  std::uint64_t protocol_errors = 0;
  std::uint64_t upstream_connected = 0;
  std::uint64_t upstream_disconnected = 0;
  std::uint64_t upstream_connect_failures = 0;
  std::uint64_t upstream_timeouts = 0;
  std::uint64_t upstream_replies_lost = 0;

  void add(const ThreadStats& t) {
    // Disconnections are read before connections so that a scrape racing a connect and its
    // disconnect never sees more of the latter.
    clients_disconnected += read(t.clients_disconnected_total);
    clients_connected += read(t.clients_connected_total);
    clients_rejected += read(t.clients_rejected_total);
    client_output_overflow += read(t.client_output_overflow_total);
    client_slow_readers += read(t.client_slow_readers_total);
    tls_handshake_failures += read(t.tls_handshake_failures_total);
    protocol_errors += read(t.protocol_errors_total);
    upstream_disconnected += read(t.upstream_disconnected_total);
    upstream_connected += read(t.upstream_connected_total);
    upstream_connect_failures += read(t.upstream_connect_failures_total);
    upstream_timeouts += read(t.upstream_timeouts_total);
    upstream_replies_lost += read(t.upstream_replies_lost_total);
  }
};

double open_count(std::uint64_t opened, std::uint64_t closed) {
  return opened > closed ? static_cast<double>(opened - closed) : 0.0;
}

// One command's counters summed over every thread.
struct CommandTotals {
  std::array<std::uint64_t, kCommandResults> results{};
  std::array<std::uint64_t, kLatencyBuckets.size() + 1> buckets{};
  std::uint64_t latency_sum_ns = 0;

  void add(const ThreadStats::CommandCell& cell) {
    for (std::size_t r = 0; r < kCommandResults; ++r) results[r] += read(cell.results[r]);
    for (std::size_t b = 0; b < buckets.size(); ++b) buckets[b] += read(cell.buckets[b]);
    latency_sum_ns += read(cell.latency_sum_ns);
  }
  std::uint64_t samples() const {
    std::uint64_t n = 0;
    for (auto b : buckets) n += b;
    return n;
  }
};

ClientMetric histogram_metric(const std::string& command, const CommandTotals& totals) {
  ClientMetric m;
  m.label = {{"command", command}};
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < totals.buckets.size(); ++b) {
    cumulative += totals.buckets[b];
    double bound =
        b < kLatencyBuckets.size() ? kLatencyBuckets[b] : std::numeric_limits<double>::infinity();
    m.histogram.bucket.push_back({cumulative, bound});
  }
  m.histogram.sample_count = cumulative;
  m.histogram.sample_sum = static_cast<double>(totals.latency_sum_ns) / 1e9;
  return m;
}

}  // namespace

ThreadStats::ThreadStats(std::size_t command_count) : commands_(command_count) {}

void ThreadStats::command(std::size_t command_id, CommandResult result,
                          std::chrono::nanoseconds latency) {
  assert(command_id < commands_.size());
  if (command_id >= commands_.size()) return;
  CommandCell& cell = commands_[command_id];
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(latency.count(), 0));
  bump(cell.results[static_cast<std::size_t>(result)]);
  bump(cell.buckets[bucket_index(ns)]);
  bump(cell.latency_sum_ns, ns);
}

void ThreadStats::client_connected() { bump(clients_connected_total); }
void ThreadStats::client_disconnected() { bump(clients_disconnected_total); }
void ThreadStats::client_rejected() { bump(clients_rejected_total); }
void ThreadStats::client_output_overflow() { bump(client_output_overflow_total); }
void ThreadStats::client_slow_reader() { bump(client_slow_readers_total); }
void ThreadStats::tls_handshake_failed() { bump(tls_handshake_failures_total); }
void ThreadStats::protocol_error() { bump(protocol_errors_total); }
void ThreadStats::upstream_connected() { bump(upstream_connected_total); }
void ThreadStats::upstream_disconnected() { bump(upstream_disconnected_total); }
void ThreadStats::upstream_connect_failure() { bump(upstream_connect_failures_total); }
void ThreadStats::upstream_timeout() { bump(upstream_timeouts_total); }
void ThreadStats::upstream_reply_lost() { bump(upstream_replies_lost_total); }

// Reads every ThreadStats at scrape time. Series appear only once they have counted something,
// so an exposition does not carry a row per (command, result) of the whole command table.
class Metrics::ThreadStatsCollector : public prometheus::Collectable {
 public:
  ThreadStatsCollector(const std::vector<std::unique_ptr<ThreadStats>>& threads,
                       std::size_t command_count,
                       std::function<std::string(std::size_t)> command_name)
      : threads_(threads),
        command_count_(command_count),
        command_name_(std::move(command_name)),
        start_time_(unix_now_seconds()) {}

  std::vector<MetricFamily> Collect() const override {
    std::vector<MetricFamily> out;
    collect_commands(out);
    collect_scalars(out);
    collect_process(start_time_, out);
    return out;
  }

 private:
  void collect_commands(std::vector<MetricFamily>& out) const {
    MetricFamily commands =
        make_family("corral_commands_total", "Client commands answered, by command and result.",
                    MetricType::Counter);
    MetricFamily durations =
        make_family("corral_command_duration_seconds",
                    "Latency of client commands in seconds, by command.", MetricType::Histogram);
    for (std::size_t id = 0; id < command_count_; ++id) {
      CommandTotals totals;
      for (const auto& t : threads_) totals.add(t->commands()[id]);
      if (totals.samples() == 0) continue;
      const std::string name = command_name_(id);
      for (std::size_t r = 0; r < kCommandResults; ++r) {
        if (totals.results[r] == 0) continue;
        ClientMetric m;
        m.label = {{"command", name}, {"result", kResultNames[r]}};
        m.counter.value = static_cast<double>(totals.results[r]);
        commands.metric.push_back(std::move(m));
      }
      durations.metric.push_back(histogram_metric(name, totals));
    }
    if (!commands.metric.empty()) out.push_back(std::move(commands));
    if (!durations.metric.empty()) out.push_back(std::move(durations));
  }

  void collect_scalars(std::vector<MetricFamily>& out) const {
    Totals s;
    for (const auto& t : threads_) s.add(*t);
    auto counter = [&out](const char* name, const char* help, std::uint64_t value) {
      out.push_back(single(name, help, MetricType::Counter, static_cast<double>(value)));
    };
    auto gauge = [&out](const char* name, const char* help, double value) {
      out.push_back(single(name, help, MetricType::Gauge, value));
    };
    counter("corral_client_connections_total", "Client connections accepted.", s.clients_connected);
    counter("corral_client_disconnections_total", "Client connections closed.",
            s.clients_disconnected);
    gauge("corral_client_connections", "Client connections currently open.",
          open_count(s.clients_connected, s.clients_disconnected));
    counter("corral_client_rejected_total",
            "Client connections refused because max_clients was reached.", s.clients_rejected);
    counter("corral_client_output_overflow_total",
            "Clients disconnected because unread pushes (messages, MONITOR lines) took their "
            "output past max_output_buffer.",
            s.client_output_overflow);
    counter("corral_client_slow_readers_total",
            "Clients disconnected for taking none of their replies for slow_reader_timeout while "
            "over max_output_buffer.",
            s.client_slow_readers);
    counter("corral_tls_handshake_failures_total",
            "TLS clients dropped before or during the handshake (bad, plain-text or stalled).",
            s.tls_handshake_failures);
    counter("corral_protocol_errors_total",
            "Client connections closed for a malformed or oversized RESP request.",
            s.protocol_errors);
    counter("corral_upstream_connects_total", "Upstream Redis connections established.",
            s.upstream_connected);
    counter("corral_upstream_disconnects_total", "Upstream Redis connections lost or closed.",
            s.upstream_disconnected);
    gauge("corral_upstream_connections", "Upstream Redis connections currently open.",
          open_count(s.upstream_connected, s.upstream_disconnected));
    counter("corral_upstream_connect_failures_total",
            "Failed attempts to connect (or authenticate) to the upstream Redis.",
            s.upstream_connect_failures);
    counter("corral_upstream_timeouts_total",
            "Upstream commands that timed out; each reset its connection.", s.upstream_timeouts);
    counter("corral_upstream_replies_lost_total",
            "Upstream commands whose reply was lost with their connection (fate unknown).",
            s.upstream_replies_lost);
  }

  const std::vector<std::unique_ptr<ThreadStats>>& threads_;
  std::size_t command_count_;
  std::function<std::string(std::size_t)> command_name_;
  double start_time_;
};

Metrics::Metrics(std::size_t thread_count, std::size_t command_count,
                 std::function<std::string(std::size_t)> command_name)
    : registry_(std::make_shared<prometheus::Registry>()) {
  threads_.reserve(thread_count);
  for (std::size_t i = 0; i < thread_count; ++i) {
    threads_.push_back(std::make_unique<ThreadStats>(command_count));
  }
  collector_ =
      std::make_shared<ThreadStatsCollector>(threads_, command_count, std::move(command_name));
  prometheus::BuildGauge()
      .Name("corral_build_info")
      .Help("Always 1; the version label names the running build.")
      .Register(*registry_)
      .Add({{"version", CORRAL_VERSION}})
      .Set(1);
}

Metrics::~Metrics() = default;

void Metrics::add_collectable(std::weak_ptr<prometheus::Collectable> collectable) {
  extra_.push_back(std::move(collectable));
}

std::string Metrics::serialize() const {
  std::vector<MetricFamily> families = collector_->Collect();
  auto append = [&families](std::vector<MetricFamily> more) {
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  };
  append(registry_->Collect());
  for (const auto& weak : extra_) {
    if (auto collectable = weak.lock()) append(collectable->Collect());
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace corral::metrics
