// The upstream's MONITOR, held while a client of Corral's is in MONITOR mode, for the one thing
// Corral's own feed cannot see: the `[db lua]` lines of the commands that scripts and functions
// run inside Redis. Only those of scripts Corral's clients sent are added to the feed: Redis
// writes an EVAL/FCALL line (with the address of the connection that sent it) and then its
// script's lines, so the lines after a script of Corral's connections (upstream/own_addresses.hpp)
// whose arguments match one the feed showed belong to a client of Corral's; other clients' and
// Corral's own scripts (fleet locks, versioned swaps) are never shown.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace corral::upstream {
class Link;
class Upstream;
}  // namespace corral::upstream

namespace corral::proxy {

class ScriptMonitor {
 public:
  enum class Readiness {
    running,      // the upstream MONITOR answered +OK: the next script's lines will be seen
    starting,     // ask again shortly
    unavailable,  // none (a partitioned upstream, a refused MONITOR): the feed goes on without
  };
  // MONITOR of a client, on its io thread: starts the upstream MONITOR on a connection of this
  // thread when none runs. The connection closes at the first line Redis writes once nobody
  // monitors (Corral's readiness PINGs come every 250 ms), or when it is lost.
  Readiness ensure_running(upstream::Upstream& upstream);
  // The feed showed a script of a client: `line` as it wrote it.
  void expect_script(std::string_view line);

  // A line of the upstream's MONITOR: true when it goes to the feed. `own` tells whether an
  // address is one of Corral's connections' (asked of script lines only). Exposed for tests.
  bool follows(std::string_view line, const std::function<bool(std::string_view)>& own);
  // What follows the address in a MONITOR line ("\"eval\" ..."); "" for a line of another shape.
  static std::string_view arguments(std::string_view line);
  static std::string_view address(std::string_view line);

 private:
  class Follower;
  enum class State { stopped, starting, running, failed };
  void started(std::uint64_t generation, bool ok);
  void line(std::uint64_t generation, std::string_view line);
  void lost(std::uint64_t generation);

  std::mutex mutex_;
  State state_ = State::stopped;
  std::uint64_t generation_ = 0;  // of the current link: a closed one's late lines are ignored
  std::shared_ptr<upstream::Link> link_;
  std::shared_ptr<Follower> follower_;
  std::chrono::steady_clock::time_point wanted_at_;  // a client waits for the +OK
  std::deque<std::string> expected_;                 // arguments of scripts the feed showed
  bool following_ = false;  // the last script line Redis wrote was one of Corral's clients'
};

ScriptMonitor& script_monitor();

}  // namespace corral::proxy
