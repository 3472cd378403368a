// HTTP endpoint for operators: GET /metrics (Prometheus text), /healthz (process up),
// /readyz (200 when the readiness probe says the upstream is reachable, else 503).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "config/settings.hpp"

namespace boost::asio {
class io_context;
}

namespace corral::metrics {

class Metrics;

class HttpEndpoint {
 public:
  // `ready` is called on the endpoint's io_context thread; it must be thread-safe.
  HttpEndpoint(boost::asio::io_context& io, const config::Endpoint& listen, const Metrics& metrics,
               std::function<bool()> ready);
  ~HttpEndpoint();
  // Binds and starts accepting; throws std::system_error when the address cannot be bound.
  void start();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral::metrics
