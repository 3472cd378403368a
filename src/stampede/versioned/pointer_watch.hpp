// Follows the version pointers of `versioned:` policies: every pointer is read at start and then
// every pointer_refresh, so this process sees rollovers made elsewhere (another Corral, a
// redis-cli SET of the pointer) within that time.
#pragma once

#include <utility>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/settings.hpp"

namespace corral::upstream {
class KeyedCaller;
}

namespace corral::stampede {

class CacheRuntime;
class VersionState;
struct PolicySet;

// The companion hash of a pointer key with the metadata of its versions (same cluster slot):
// fields v<N>:created, v<N>:by, v<N>:previous, v<N>:retired (times in Unix milliseconds).
std::string version_metadata_key(std::string_view pointer);

// One per process, on one io thread (the pool's). Each tick reads all pointers in one round
// trip (one small Lua script per policy, pipelined), with the previous version from the
// metadata hash. Reads the current policies every tick, so it survives reloads; while the
// upstream is unreachable, the last known versions stay (logged once).
class PointerWatch : public std::enable_shared_from_this<PointerWatch> {
 public:
  // `caller` reads each pointer on its node (a cluster's pointers may live on different ones).
  PointerWatch(const boost::asio::any_io_executor& executor,
               std::shared_ptr<upstream::KeyedCaller> caller, CacheRuntime& cache);

  void start();  // on the executor's thread
  void stop();

  // A version change made by this process (CORRAL.ROLLOVER, any thread): pointer reads in flight
  // when it happens are discarded, so they cannot put the old version back.
  static void apply_rollover(VersionState& versions, std::uint64_t current, std::uint64_t previous);

 private:
  class Replies;

  void tick();
  void schedule(config::Duration delay);
  void on_pointer(const PolicySet& policies, std::size_t index, std::uint64_t epoch,
                  std::string_view reply);
  void on_failure(std::string_view error);
  // Logs `problem` for `prefix` when it is new (empty: the problem is over).
  void note(const std::string& prefix, std::string problem);

  boost::asio::any_io_executor executor_;
  std::shared_ptr<upstream::KeyedCaller> caller_;
  CacheRuntime& cache_;
  boost::asio::steady_timer timer_;
  bool stopping_ = false;
  std::size_t in_flight_ = 0;                    // replies of the last tick still to come
  bool unreachable_ = false;                     // the last tick could not read the pointers
  std::map<std::string, std::string> problems_;  // per policy prefix: what was logged last
};

}  // namespace corral::stampede
