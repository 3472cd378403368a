// MONITOR answered by Corral: every command of this process's clients, from every io thread, as
// Redis's MONITOR shows it, to each client in MONITOR mode. Corral's own traffic (readiness PINGs,
// CLIENT ID, COMMAND learning, tracking, fleet scripts) never passes here, nor do other proxies'
// clients, which the upstream's MONITOR would show; of that only the lines of the scripts Corral's
// clients run are added (proxy/local/script_monitor.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/commands/command_table.hpp"

namespace corral::proxy {

class MonitorFeed {
 public:
  using Push = std::function<void(std::string)>;

  void add(std::uint64_t client_id, Push push);
  void remove(std::uint64_t client_id);
  // One relaxed load: the cost of MONITOR to every command while nobody watches.
  bool active() const { return watchers_.load(std::memory_order_relaxed) > 0; }
  // A command accepted for `row` (Redis leaves admin commands out, as MONITOR itself).
  void feed(const CommandSpec& row, int database, std::string_view addr,
            std::span<const std::string_view> argv);
  // A line written elsewhere (a script's call relayed from the upstream's MONITOR).
  void feed_line(std::string_view line);

 private:
  void push_all(const std::string& line);

  struct Watcher {
    std::uint64_t client_id;
    Push push;
  };
  std::mutex mutex_;
  std::vector<Watcher> list_;
  std::atomic<std::size_t> watchers_{0};
};

// The process's feed.
MonitorFeed& monitor_feed();

// `+<seconds>.<micros> [<db> <addr>] "arg" ...` with Redis's escaping and its redaction of
// AUTH, HELLO ... AUTH and MIGRATE ... AUTH/AUTH2 secrets. Exposed for tests.
std::string monitor_line(std::chrono::system_clock::time_point when, int database,
                         std::string_view addr, std::span<const std::string_view> argv);

}  // namespace corral::proxy
