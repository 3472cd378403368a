// The running I/O layer: io threads, the client listener, the metrics endpoint and signals. It
// knows Handlers only through session/handler.hpp; the wiring (src/app.cpp) installs them.
#pragma once

#include <utility>

#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "config/settings.hpp"
#include "metrics/metrics.hpp"
#include "metrics/process_info.hpp"
#include "session/handler.hpp"

namespace corral::slowlog {
class SlowLog;
}

namespace corral::session {

struct Worker;

class Server {
 public:
  // Called on the admin thread with a new config that loaded without errors (SIGHUP).
  using ReloadHook = std::function<void(const config::Settings& fresh)>;

  Server(const config::Settings& settings, metrics::Metrics& metrics, metrics::ProcessInfo& info);
  ~Server();

  int threads() const { return static_cast<int>(workers_.size()); }
  boost::asio::io_context& io(int thread);
  // Every thread needs its handler before run(); the handler must outlive run().
  void set_handler(int thread, Handler& handler);
  void on_reload(ReloadHook hook) { reload_ = std::move(hook); }
  // The slowlog every thread records its slow requests in (slowlog.enabled); outlives run().
  void set_slowlog(slowlog::SlowLog& log);

  // bind() then serve().
  void run();
  // Binds the listeners and the metrics endpoint; throws std::system_error when an address cannot
  // be bound, std::runtime_error when the TLS certificate or key cannot be loaded.
  void bind();
  // The bound listener ports (listen.port may be 0: any free port); 0 when there is none.
  unsigned short port() const;
  unsigned short tls_port() const;
  // Starts the io threads and serves until SIGINT, SIGTERM or stop().
  void serve();
  // Thread-safe: stops accepting and ends serve() (connected sessions are dropped).
  void stop();

 private:
  struct Admin;
  void wait_for_reload(boost::asio::signal_set& signal);
  void reload_tls(const config::Settings& fresh);

  const config::Settings& settings_;
  metrics::Metrics& metrics_;
  metrics::ProcessInfo& info_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Admin> admin_;
  ReloadHook reload_;
};

}  // namespace corral::session
