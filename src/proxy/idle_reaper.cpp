// The reaper's tick: the registry picks the clients quiet for long enough by their last command;
// each client's own session then checks its replies and last write before closing.
#include "proxy/idle_reaper.hpp"

#include <algorithm>

#include "proxy/local/client_registry.hpp"

namespace corral::proxy {

namespace {
// Redis checks idle clients about once a second; short timeouts are checked a little more often.
std::chrono::milliseconds tick_interval(std::chrono::milliseconds idle_timeout) {
  return std::clamp(idle_timeout / 4, std::chrono::milliseconds(100),
                    std::chrono::milliseconds(1000));
}
}  // namespace

IdleReaper::IdleReaper(const boost::asio::any_io_executor& executor,
                       std::chrono::milliseconds idle_timeout)
    : idle_timeout_(idle_timeout), interval_(tick_interval(idle_timeout)), timer_(executor) {}

void IdleReaper::start() {
  if (idle_timeout_.count() <= 0 || ticking_ || stopped_) return;
  ticking_ = true;
  schedule();
}

void IdleReaper::set_idle_timeout(std::chrono::milliseconds idle_timeout) {
  idle_timeout_ = idle_timeout;
  interval_ = tick_interval(idle_timeout);
  start();  // the running tick, if any, reads the new values when it fires
}

void IdleReaper::stop() {
  stopped_ = true;
  timer_.cancel();
}

void IdleReaper::schedule() {
  timer_.expires_after(interval_);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->stopped_ || self->idle_timeout_.count() <= 0) {
      self->ticking_ = false;
      return;
    }
    client_registry().close_idle(self->idle_timeout_);
    self->schedule();
  });
}

}  // namespace corral::proxy
