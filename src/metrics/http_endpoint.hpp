// HTTP endpoint for operators: GET /metrics (Prometheus text), /healthz (process up),
// /readyz (200 when the readiness probe says the upstream is reachable, else 503).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "config/settings.hpp"

namespace boost::asio {
class io_context;
}

namespace corral::metrics {

class Metrics;

// HTTP/1.1 with keep-alive; GET and HEAD only (others get 405), unknown paths 404.
// The endpoint's io_context must be run by one thread (it is the endpoint's implicit strand).
// Every pending operation holds the endpoint's state alive, so destroying the HttpEndpoint while
// its io_context still runs is safe; `metrics` and `ready` must outlive that io_context's run.
class HttpEndpoint {
 public:
  struct Limits {
    std::chrono::milliseconds read_timeout{10000};  // per request, idle keep-alive included
    std::size_t max_connections = 64;               // beyond this, new connections are closed
    std::size_t max_request = 16 * 1024;            // request line + headers + body, bytes
  };

  // Empty when ready; else why not, the body of /readyz's 503.
  using NotReadyReason = std::function<std::string()>;

  // `ready` is called on the endpoint's io_context thread; it must be thread-safe.
  // An empty `ready` means always ready.
  HttpEndpoint(boost::asio::io_context& io, const config::Endpoint& listen, const Metrics& metrics,
               NotReadyReason ready);
  HttpEndpoint(boost::asio::io_context& io, const config::Endpoint& listen, const Metrics& metrics,
               NotReadyReason ready, Limits limits);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // Binds and starts accepting; throws std::system_error when the address cannot be bound
  // (the message names the address). Calling it again once started does nothing.
  void start();
  // Closes the acceptor and every open connection. Any thread; the closing runs on the
  // io_context (at once when called from it). Idempotent.
  void stop();
  // The bound port (useful after binding port 0); 0 before start().
  unsigned short port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral::metrics
