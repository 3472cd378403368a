// Closes hot-key detection windows: every hot_keys.window, on one io thread, the threads'
// sketches are merged into the report (HotKeys::roll) with the window's measured length.
#pragma once

#include <chrono>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "stampede/core/hot_keys.hpp"

namespace corral::stampede {

class HotKeyWindow : public std::enable_shared_from_this<HotKeyWindow> {
 public:
  HotKeyWindow(const boost::asio::any_io_executor& executor, HotKeys& keys,
               std::chrono::milliseconds window);

  void start();
  void stop();

 private:
  void arm();

  HotKeys& keys_;
  std::chrono::milliseconds window_;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point opened_;
  bool running_ = false;
};

}  // namespace corral::stampede
