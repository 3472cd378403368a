// client.idle_timeout, as Redis's `timeout`: a client that sent nothing and was sent nothing for
// that long is disconnected, unless it is subscribed (pub/sub, MONITOR) or awaits a reply (a
// blocked BLPOP is waiting, not idle). One timer per process walks the client registry.
#pragma once

#include <utility>

#include <chrono>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace corral::proxy {

class IdleReaper : public std::enable_shared_from_this<IdleReaper> {
 public:
  IdleReaper(const boost::asio::any_io_executor& executor, std::chrono::milliseconds idle_timeout);

  void start();  // on the executor's thread; does nothing when idle_timeout is 0
  void stop();
  // A reloaded client.idle_timeout (on the executor's thread): 0 stops the ticks.
  void set_idle_timeout(std::chrono::milliseconds idle_timeout);

 private:
  void schedule();

  std::chrono::milliseconds idle_timeout_;
  std::chrono::milliseconds interval_;
  boost::asio::steady_timer timer_;
  bool stopped_ = false;
  bool ticking_ = false;
};

}  // namespace corral::proxy
