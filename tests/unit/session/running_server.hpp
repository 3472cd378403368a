// Test support: a session::Server on a free loopback port with one io thread answering from a
// MemoryHandler, served on a thread of its own for as long as the object lives.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "config/settings.hpp"
#include "memory_handler.hpp"
#include "metrics/metrics.hpp"
#include "metrics/process_info.hpp"
#include "session/server.hpp"

namespace corral::test {

class RunningServer {
 public:
  explicit RunningServer(void (*adjust)(corral::config::Settings&) = nullptr)
      : settings_(make_settings(adjust)),
        metrics_(1, 1, [](std::size_t) { return std::string("cmd"); }),
        server_(settings_, metrics_, info_),
        handler_(server_.io(0).get_executor()) {
    server_.set_handler(0, handler_);
    server_.bind();
    thread_ = std::thread([this] {
      server_.serve();
      std::lock_guard lock(served_mutex_);
      served_ = true;
      served_changed_.notify_all();
    });
  }
  ~RunningServer() {
    server_.stop();
    thread_.join();
  }
  unsigned short port() const { return server_.port(); }
  MemoryHandler& handler() { return handler_; }
  corral::session::Server& server() { return server_; }
  // serve() returned by itself (a drain ended it).
  bool wait_served(std::chrono::milliseconds limit) {
    std::unique_lock lock(served_mutex_);
    return served_changed_.wait_for(lock, limit, [this] { return served_; });
  }
  corral::metrics::ProcessInfo& info() { return info_; }

 private:
  static corral::config::Settings make_settings(void (*adjust)(corral::config::Settings&)) {
    corral::config::Settings settings;
    settings.listen = {"127.0.0.1", 0};
    settings.threads = 1;
    if (adjust) adjust(settings);
    return settings;
  }

  corral::config::Settings settings_;
  corral::metrics::Metrics metrics_;
  corral::metrics::ProcessInfo info_;
  corral::session::Server server_;
  MemoryHandler handler_;
  std::mutex served_mutex_;
  std::condition_variable served_changed_;
  bool served_ = false;
  std::thread thread_;
};

}  // namespace corral::test
