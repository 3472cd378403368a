// Asks the upstream for its COMMAND table and version whenever its server may have changed (a
// reconnect, a new cluster map), and publishes the commands the built-in table lacks
// (proxy/commands/learned_commands.hpp).
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

namespace corral::upstream {
class Upstream;
}

namespace corral::proxy {

class CommandLearner : public std::enable_shared_from_this<CommandLearner> {
 public:
  // `upstream` (that of the io thread of `executor`) must outlive the run of that thread;
  // start() is called on it.
  CommandLearner(const boost::asio::any_io_executor& executor, upstream::Upstream& upstream);
  void start();

 private:
  boost::asio::awaitable<void> loop();

  boost::asio::any_io_executor executor_;
  upstream::Upstream& upstream_;
};

}  // namespace corral::proxy
