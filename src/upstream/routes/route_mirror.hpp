// Mirroring a route's commands to a second upstream (a migration's target): a copy sent after the
// client's command, fire-and-forget, through a bounded number in flight; when the mirror falls
// behind, copies are dropped and counted, never the client's command, and its reply never waits.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "upstream/upstream.hpp"

namespace corral::upstream {

// Process-wide counts of one route's mirror (every io thread adds to them), for /metrics.
struct MirrorCounters {
  std::string route;     // the route's prefix
  std::string upstream;  // the mirror's name
  std::atomic<std::uint64_t> sent{0};
  std::atomic<std::uint64_t> dropped{0};  // the queue was full or the mirror unreachable
  std::atomic<std::uint64_t> failed{0};   // the mirror answered an error or lost the command
  std::atomic<std::int64_t> queued{0};    // sent and not yet answered
};

// One per route with a mirror and io thread, used on that thread only.
class RouteMirror {
 public:
  RouteMirror(std::shared_ptr<Upstream> mirror, std::size_t max_queue, int reads_percent,
              std::shared_ptr<MirrorCounters> counters);

  // A copy of `command`, just sent to the route's upstream, goes to the mirror: every write, and
  // reads_percent of the read-only commands (an exact share: every 100/percent-th read).
  void copy(const Routed& command);

 private:
  struct State;

  std::shared_ptr<Upstream> mirror_;
  std::size_t max_queue_;
  int reads_percent_;
  int read_credit_ = 0;  // out of 100: a read is copied when it reaches 100
  std::shared_ptr<State> state_;
};

}  // namespace corral::upstream
