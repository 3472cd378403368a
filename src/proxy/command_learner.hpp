// Asks the upstream for its COMMAND table whenever the shared connection (re)connects, and
// publishes the commands the built-in table lacks (proxy/learned_commands.hpp).
#pragma once

#include <memory>

#include <boost/asio/awaitable.hpp>

namespace corral::upstream {
class Pool;
}

namespace corral::proxy {

class CommandLearner : public std::enable_shared_from_this<CommandLearner> {
 public:
  // `pool` must outlive the run of its io thread; start() is called on that thread.
  CommandLearner(upstream::Pool& pool, int database);
  void start();

 private:
  boost::asio::awaitable<void> loop();

  upstream::Pool& pool_;
  int database_;
};

}  // namespace corral::proxy
