// One io thread: its io_context and the Handler that answers its clients. Sessions accepted for
// it live on it from start to end, so nothing here needs a lock.
#pragma once

#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>
#include <unordered_set>

#include "config/settings.hpp"
#include "metrics/metrics.hpp"
#include "metrics/process_info.hpp"
#include "session/drainable.hpp"
#include "session/handler.hpp"
#include "upstream/turn_queue.hpp"

namespace corral::slowlog {
class SlowLog;
}

namespace corral::session {

// An io_context whose pending handlers can be destroyed (shutdown) before any context is:
// objects kept alive by one thread's handlers may own timers of another thread's context, and
// must not outlive that context's services.
class IoContext : public boost::asio::io_context {
 public:
  using boost::asio::execution_context::shutdown;
  using boost::asio::io_context::io_context;
};

struct Worker {
  Worker(const config::Settings& config, metrics::ThreadStats& thread_stats,
         metrics::ProcessInfo& process_info)
      : settings(config),
        client(config.client),
        stats(thread_stats),
        info(process_info),
        work(io.get_executor()) {}

  const config::Settings& settings;
  // This thread's copy of client.*: a SIGHUP reload replaces it, on this thread (Server).
  config::ClientSettings client;
  metrics::ThreadStats& stats;
  metrics::ProcessInfo& info;
  IoContext io{1};
  // The end-of-turn work of this thread's sessions and upstream connections: one handler a turn.
  upstream::TurnQueue& turns{boost::asio::use_service<upstream::TurnQueue>(io)};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work;
  Handler* handler = nullptr;           // set by the wiring before run(); outlives the io thread
  slowlog::SlowLog* slowlog = nullptr;  // set when slowlog.enabled; outlives the io thread
  std::size_t index = 0;                // this thread's number (its slowlog ring)
  std::thread thread;
  // Touched only on the io thread: the live sessions, and whether new ones must drain at once.
  std::unordered_set<Drainable*> sessions;
  bool draining = false;
};

}  // namespace corral::session
