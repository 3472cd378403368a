// The running proxy: io threads, the client listener, the metrics endpoint and signal handling.
#pragma once

#include <utility>

#include <atomic>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "config/settings.hpp"
#include "metrics/metrics.hpp"
#include "proxy/process_info.hpp"
#include "stampede/cache_runtime.hpp"

namespace corral::stampede {
class InvalidationListener;
}

namespace corral::session {

struct Worker;

class Server {
 public:
  Server(const config::Settings& settings, metrics::Metrics& metrics);
  ~Server();

  // Binds the listener and the metrics endpoint (throws std::system_error when it cannot),
  // then serves until SIGINT or SIGTERM.
  void run();

 private:
  struct Admin;
  void wait_for_reload(boost::asio::signal_set& signal);

  const config::Settings& settings_;
  metrics::Metrics& metrics_;
  proxy::ProcessInfo info_;
  std::unique_ptr<stampede::CacheRuntime> cache_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Admin> admin_;
  std::shared_ptr<stampede::InvalidationListener> listener_;
};

}  // namespace corral::session
