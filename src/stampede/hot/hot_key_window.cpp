// HotKeyWindow: a timer loop; the rate divisor is the time that really passed, not the nominal
// window, so a late timer on a loaded thread does not inflate rates.
#include "stampede/hot/hot_key_window.hpp"

namespace corral::stampede {

HotKeyWindow::HotKeyWindow(const boost::asio::any_io_executor& executor, HotKeys& keys,
                           std::chrono::milliseconds window, std::function<void()> closed)
    : keys_(keys), window_(window), closed_(std::move(closed)), timer_(executor) {}

void HotKeyWindow::start() {
  running_ = true;
  opened_ = std::chrono::steady_clock::now();
  arm();
}

void HotKeyWindow::stop() {
  running_ = false;
  timer_.cancel();
}

void HotKeyWindow::arm() {
  timer_.expires_after(window_);
  timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    const auto self = weak.lock();
    if (ec || !self || !self->running_) return;
    const auto now = std::chrono::steady_clock::now();
    self->keys_.roll(now - self->opened_);
    self->opened_ = now;
    if (self->closed_) self->closed_();
    self->arm();
  });
}

}  // namespace corral::stampede
