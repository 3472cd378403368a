// Closes hot-key detection windows: every hot_keys.window, on one io thread, the threads'
// sketches are merged into the report (HotKeys::roll) with the window's measured length.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "stampede/core/hot_keys.hpp"

namespace corral::stampede {

class HotKeyWindow : public std::enable_shared_from_this<HotKeyWindow> {
 public:
  // `closed`, when set, runs after each roll (the hot-key cache chooses its keys there).
  HotKeyWindow(const boost::asio::any_io_executor& executor, HotKeys& keys,
               std::chrono::milliseconds window, std::function<void()> closed = {});

  void start();
  void stop();

 private:
  void arm();

  HotKeys& keys_;
  std::chrono::milliseconds window_;
  std::function<void()> closed_;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point opened_;
  bool running_ = false;
};

}  // namespace corral::stampede
