// The running I/O layer: io threads, the client listener, the metrics endpoint and signals. It
// knows Handlers only through session/handler.hpp; the wiring (src/app.cpp) installs them.
#pragma once

#include <utility>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
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
  // Why the upstream cannot be served now (empty: it can), for /readyz; set before bind(). It is
  // called on the admin thread and must be thread-safe. Draining is added by the server itself.
  void set_readiness(std::function<std::string()> not_ready_reason) {
    not_ready_reason_ = std::move(not_ready_reason);
  }
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
  // Thread-safe (SIGTERM, SIGINT): stops accepting and reading, lets every client get the replies
  // to what it sent, closes each connection after its last one, then stop()s; at most
  // shutdown_timeout later in any case. /readyz answers 503 from the start.
  void drain();

 private:
  struct Admin;
  void wait_for_reload(boost::asio::signal_set& signal);
  void reload_tls(const config::Settings& fresh);
  void reload_client_settings(const config::Settings& fresh);
  void wait_for_drain(std::chrono::steady_clock::time_point deadline);

  const config::Settings& settings_;
  metrics::Metrics& metrics_;
  metrics::ProcessInfo& info_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Admin> admin_;
  ReloadHook reload_;
  std::function<std::string()> not_ready_reason_;
};

}  // namespace corral::session
