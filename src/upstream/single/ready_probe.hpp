// Readiness that notices a frozen upstream: an io thread PINGs its shared connection now and then,
// and counts itself stalled while a PING goes unanswered past its deadline. A connected socket
// alone says nothing about a server that is stopped (SIGSTOP) or stuck.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "upstream/link.hpp"

namespace corral::upstream {

class ReadyProbe : public std::enable_shared_from_this<ReadyProbe> {
 public:
  // `stalled` counts the probes (threads) whose upstream has not answered in time; readiness
  // requires it to be 0. `links` must outlive the executor's run.
  ReadyProbe(const boost::asio::any_io_executor& executor, Links& links, int database,
             std::chrono::milliseconds interval, std::chrono::milliseconds deadline,
             std::atomic<int>& stalled);
  void start();
  // Ends the PINGs for good (before `links` goes away); a stalled probe stops counting.
  void stop();

  // The outcome of the outstanding PING (called on the executor's thread).
  void answered();
  void failed();

 private:
  boost::asio::awaitable<void> loop();
  void set_stalled(bool stalled);

  boost::asio::any_io_executor executor_;
  Links& links_;
  int database_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds deadline_;
  std::atomic<int>& stalled_count_;
  bool stopped_ = false;
  bool outstanding_ = false;
  bool stalled_ = false;
  std::chrono::steady_clock::time_point sent_at_;
};

}  // namespace corral::upstream
