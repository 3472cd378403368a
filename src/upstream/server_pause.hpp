// A CLIENT PAUSE that Corral forwarded to the upstream, known process-wide while it is in force:
// Redis then holds what Corral's own links send (all of it under PAUSE ALL, writes under WRITE),
// and a command or health PING that waits for the pause's end is not a stalled server.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace corral::upstream {

class ServerPause {
 public:
  using Clock = std::chrono::steady_clock;

  // A pause until `until` was sent upstream (or queued in a transaction that EXEC runs). A later
  // pause never shortens an earlier one, as Redis keeps the later end of the two.
  void forwarded(Clock::time_point until);
  // The upstream answered CLIENT UNPAUSE: what it held goes on now.
  void unpaused();
  // True while a forwarded pause may hold commands in the upstream.
  bool in_force(Clock::time_point now = Clock::now()) const;

 private:
  std::atomic<std::int64_t> until_ns_{0};  // steady_clock's epoch; 0: none
};

// The process's one record (every io thread's connections and probes read it).
ServerPause& server_pause();

}  // namespace corral::upstream
