// Process metrics. Hot-path counters live in per-thread blocks written by one io thread each
// (relaxed atomics, no locks); they are summed into Prometheus families only when scraped.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace prometheus {
class Collectable;
class Registry;
}  // namespace prometheus

namespace corral::metrics {

enum class CommandResult : std::uint8_t { ok, error, refused, unavailable };
inline constexpr std::size_t kCommandResults = 4;
// Upper bounds (seconds) of the command latency histogram buckets; +Inf is implicit.
inline constexpr std::array<double, 14> kLatencyBuckets = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0};

// Counters of one io thread. Only that thread writes; the scraper reads. Because there is a
// single writer, increments are a relaxed load + store (no locked read-modify-write); a second
// writing thread would lose counts, never corrupt memory. Cache-line aligned so that two threads'
// blocks never share a line.
class alignas(64) ThreadStats {
 public:
  explicit ThreadStats(std::size_t command_count);

  void command(std::size_t command_id, CommandResult result, std::chrono::nanoseconds latency);
  void client_connected();
  void client_disconnected();
  void client_rejected();         // over max_clients
  void client_output_overflow();  // disconnected: pushes (messages, MONITOR) past the limit
  void client_slow_reader();      // disconnected: over the limit, took nothing for a while
  void tls_handshake_failed();    // a TLS client that failed or stalled its handshake
  void protocol_error();
  void upstream_connected();
  void upstream_disconnected();
  void upstream_connect_failure();
  void upstream_timeout();     // a command timed out; the connection was reset
  void upstream_reply_lost();  // a command's reply was lost with its connection

  struct alignas(64) CommandCell {
    std::array<std::atomic<std::uint64_t>, kCommandResults> results{};
    std::array<std::atomic<std::uint64_t>, kLatencyBuckets.size() + 1> buckets{};
    std::atomic<std::uint64_t> latency_sum_ns{0};
  };
  const std::vector<CommandCell>& commands() const { return commands_; }

  std::atomic<std::uint64_t> clients_connected_total{0};
  std::atomic<std::uint64_t> clients_disconnected_total{0};
  std::atomic<std::uint64_t> clients_rejected_total{0};
  std::atomic<std::uint64_t> client_output_overflow_total{0};
  std::atomic<std::uint64_t> client_slow_readers_total{0};
  std::atomic<std::uint64_t> tls_handshake_failures_total{0};
  std::atomic<std::uint64_t> protocol_errors_total{0};
  std::atomic<std::uint64_t> upstream_connected_total{0};
  std::atomic<std::uint64_t> upstream_disconnected_total{0};
  std::atomic<std::uint64_t> upstream_connect_failures_total{0};
  std::atomic<std::uint64_t> upstream_timeouts_total{0};
  std::atomic<std::uint64_t> upstream_replies_lost_total{0};

 private:
  std::vector<CommandCell> commands_;
};

class Metrics {
 public:
  // `command_name(id)` names command ids for the `command` label.
  Metrics(std::size_t thread_count, std::size_t command_count,
          std::function<std::string(std::size_t)> command_name);
  ~Metrics();

  ThreadStats& thread(std::size_t index) { return *threads_[index]; }
  std::size_t thread_count() const { return threads_.size(); }
  // Shared registry: other modules add their own families (cache, stampede ...).
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  // Another module's collector (prometheus-cpp 1.0's Registry cannot hold custom ones). Held
  // weakly: a collector that is gone is skipped. Call before serving scrapes.
  void add_collectable(std::weak_ptr<prometheus::Collectable> collectable);
  // The Prometheus text exposition of everything (thread stats summed + the registry).
  std::string serialize() const;

 private:
  class ThreadStatsCollector;
  std::vector<std::unique_ptr<ThreadStats>> threads_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<ThreadStatsCollector> collector_;
  std::vector<std::weak_ptr<prometheus::Collectable>> extra_;
};

}  // namespace corral::metrics
