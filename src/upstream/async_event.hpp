// A one-waiter wake-up signal for coroutines on one io_context (a condition variable without a
// lock).
#pragma once

#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace corral::upstream {

class AsyncEvent {
 public:
  explicit AsyncEvent(const boost::asio::any_io_executor& executor)
      : timer_(executor, boost::asio::steady_timer::time_point::max()) {}

  // Wakes the waiter; a notify with nobody waiting is remembered for the next wait().
  // Cheap when repeated: the timer is touched only when a waiter sleeps and was not yet woken.
  void notify() {
    if (pending_) return;
    pending_ = true;
    if (waiting_) timer_.cancel();
  }

  boost::asio::awaitable<void> wait() {
    while (!pending_) {
      boost::system::error_code ignored;
      waiting_ = true;
      co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
      waiting_ = false;
    }
    pending_ = false;
  }

 private:
  boost::asio::steady_timer timer_;
  bool pending_ = false;
  bool waiting_ = false;
};

}  // namespace corral::upstream
