// Process-wide facts shown by INFO and HELLO; counters are shared by all io threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace corral::metrics {

struct ProcessInfo {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  int threads = 1;
  std::atomic<std::uint64_t> next_client_id{1};
  std::atomic<std::int64_t> connected_clients{0};
  std::atomic<std::uint64_t> total_connections{0};
  std::atomic<int> ready_upstream_connections{0};
  // Io threads whose upstream stopped answering their readiness PING in time (ReadyProbe).
  std::atomic<int> stalled_upstreams{0};
  // SIGTERM: the listener is closed and the clients' last replies are being written (/readyz 503).
  std::atomic<bool> draining{false};
  // AUTH and HELLO ... AUTH attempts refused (a password guesser shows here).
  std::atomic<std::uint64_t> auth_failures{0};
  // Pools open for clients that authenticated as an upstream ACL user (upstream::UserPools).
  std::atomic<int> user_pools{0};
  // Commands Corral refuses that its own upstream user may run (-1: not known; RefusalAudit).
  std::atomic<int> refused_but_runnable{-1};
};

}  // namespace corral::metrics
