// The readiness probe's loop: one PING in flight at a time on the thread's shared connection.
#include <utility>

#include "upstream/single/ready_probe.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "upstream/server_pause.hpp"

namespace corral::upstream {

namespace asio = boost::asio;

namespace {

// Holds the probe weakly: a PING answered after shutdown has no one to tell.
class ProbeReply : public ReplyTarget {
 public:
  explicit ProbeReply(std::weak_ptr<ReadyProbe> probe) : probe_(std::move(probe)) {}
  void on_reply(std::uint64_t, std::string_view reply) override {
    if (auto probe = probe_.lock()) {
      // -LOADING or -BUSY: the server answers but cannot serve yet.
      if (!reply.empty() && reply.front() == '-') {
        probe->failed();
      } else {
        probe->answered();
      }
    }
  }
  void on_failure(std::uint64_t, std::string_view) override {
    if (auto probe = probe_.lock()) probe->failed();
  }

 private:
  std::weak_ptr<ReadyProbe> probe_;
};
}  // namespace

ReadyProbe::ReadyProbe(const asio::any_io_executor& executor, Links& links, int database,
                       std::chrono::milliseconds interval, std::chrono::milliseconds deadline,
                       std::atomic<int>& stalled)
    : executor_(executor),
      links_(links),
      database_(database),
      interval_(interval),
      deadline_(deadline),
      stalled_count_(stalled) {}

void ReadyProbe::start() {
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->loop(); }, asio::detached);
}

void ReadyProbe::stop() {
  stopped_ = true;
  set_stalled(false);
}

void ReadyProbe::answered() {
  outstanding_ = false;
  set_stalled(false);
}

void ReadyProbe::failed() {
  outstanding_ = false;
  if (stopped_) return;
  set_stalled(true);
}

void ReadyProbe::set_stalled(bool stalled) {
  if (stalled == stalled_) return;
  stalled_ = stalled;
  stalled_count_.fetch_add(stalled ? 1 : -1, std::memory_order_relaxed);
}

asio::awaitable<void> ReadyProbe::loop() {
  asio::steady_timer timer(executor_);
  for (;;) {
    timer.expires_after(interval_);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec || stopped_) co_return;
    const auto now = std::chrono::steady_clock::now();
    if (outstanding_) {
      // A forwarded CLIENT PAUSE ALL holds the PING in Redis until its end: the deadline counts
      // from there. Otherwise still no answer: stalled now, and ready again once it is answered.
      if (server_pause().in_force(now)) {
        sent_at_ = now;
      } else if (now - sent_at_ > deadline_) {
        set_stalled(true);
      }
      continue;
    }
    auto reply = std::make_shared<ProbeReply>(weak_from_this());
    // Affinity 0: the PING shares a connection with clients, so it queues behind what they wait
    // for, which is exactly what readiness should measure.
    // RESP2: the probe reads "+PONG" whatever protocol the clients speak.
    if (links_.send_shared(database_, 0, kPingCommand, reply, 0, 2)) {
      outstanding_ = true;
      sent_at_ = now;
    }
  }
}

}  // namespace corral::upstream
