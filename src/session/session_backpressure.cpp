// Back-pressure for one client session: past client.max_output_buffer Corral stops reading its
// requests (process_input waits), and a client that then takes none of its replies for
// client.slow_reader_timeout is disconnected. Pushes cannot be held back: past the limit they cut.
// A relayed replication stream holds its upstream side instead.
#include <chrono>
#include <memory>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <spdlog/spdlog.h>

#include "session/session.hpp"
#include "session/worker.hpp"

namespace corral::session {

using boost::system::error_code;

template <class Stream>
bool Session<Stream>::over_output_limit() const {
  return buffered() > worker_.client.max_output_buffer;
}

template <class Stream>
void Session<Stream>::check_output_limit(bool from_push) {
  if (closed_ || !over_output_limit()) return;
  if (!from_push) {
    start_slow_reader_clock();
    return;
  }
  // Messages and MONITOR lines keep coming whether the client reads or not: like Redis's pubsub
  // output limit, the client is cut rather than buffered for without bound.
  worker_.stats.client_output_overflow();
  spdlog::warn(
      "client {}: pushes took its output to {} bytes, over client.max_output_buffer; "
      "disconnecting",
      handler_->client_id(), buffered());
  abort();
}

template <class Stream>
void Session<Stream>::relay_output(std::string_view bytes) {
  relayed_output_ = true;
  note_output_available();
  output_.append(bytes);
  want_write();
  if (relay_held_ || !over_output_limit()) return;
  // A replica behind on the stream makes the upstream wait (TCP then slows Redis, whose own
  // replica output limit applies); one that takes nothing for slow_reader_timeout is cut.
  relay_held_ = true;
  handler_->hold_relay(true);
  start_slow_reader_clock();
  publish_output();  // CLIENT LIST's obl shows the backlog that held it
}

template <class Stream>
void Session<Stream>::start_slow_reader_clock() {
  if (slow_reader_clock_running_) return;
  slow_reader_clock_running_ = true;
  taken_at_ = std::chrono::steady_clock::now();
  if (!slow_reader_clock_) {
    slow_reader_clock_ = std::make_unique<boost::asio::steady_timer>(stream_.get_executor());
  }
  wait_slow_reader_clock();
}

template <class Stream>
void Session<Stream>::wait_slow_reader_clock() {
  slow_reader_clock_->expires_at(taken_at_ + worker_.client.slow_reader_timeout);
  slow_reader_clock_->async_wait([weak = this->weak_from_this()](const error_code& ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->on_slow_reader_clock();
  });
}

// Runs at the deadline only (no timer work per write): the writes since then moved taken_at_.
template <class Stream>
void Session<Stream>::on_slow_reader_clock() {
  if (closed_ || !over_output_limit()) {
    slow_reader_clock_running_ = false;
    slow_reader_second_look_ = false;
    return;
  }
  const auto timeout = worker_.client.slow_reader_timeout;
  const auto now = std::chrono::steady_clock::now();
  // Everything held is parked behind an earlier reply still due (a BLPOP first in the pipeline):
  // there is nothing the client could have read, so the clock starts again.
  if (output_.empty() && written_ == writing_.size()) taken_at_ = now;
  if (now - taken_at_ < timeout) {
    slow_reader_second_look_ = false;
    return wait_slow_reader_clock();
  }
  // A thread that ran late (a loaded machine) finds the deadline and the write that made progress
  // before it ready together, in either order: the verdict waits until the handlers already
  // queued, that write's completion among them, have run.
  if (!std::exchange(slow_reader_second_look_, true)) {
    boost::asio::post(stream_.get_executor(), [weak = this->weak_from_this()] {
      if (auto self = weak.lock()) self->on_slow_reader_clock();
    });
    return;
  }
  slow_reader_second_look_ = false;
  worker_.stats.client_slow_reader();
  spdlog::warn(
      "client {}: took none of its {} reply bytes for client.slow_reader_timeout ({} ms); "
      "disconnecting",
      handler_->client_id(), buffered(),
      std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  abort();
}

// The client had nothing it could read (everything held waits behind an earlier reply) and now
// has: the slow-reader clock counts from here, not from its last deadline check.
template <class Stream>
void Session<Stream>::note_output_available() {
  if (slow_reader_clock_running_ && output_.empty() && written_ == writing_.size()) {
    taken_at_ = std::chrono::steady_clock::now();
  }
}

template <class Stream>
void Session<Stream>::note_output_taken() {
  if (relay_held_ && !over_output_limit()) {
    relay_held_ = false;
    handler_->hold_relay(false);
  }
  if (!slow_reader_clock_running_) return;
  taken_at_ = std::chrono::steady_clock::now();
  if (!over_output_limit() && output_room_) output_room_->notify();
}

// session.cpp instantiates the rest of Session.
template bool Session<PlainStream>::over_output_limit() const;
template void Session<PlainStream>::check_output_limit(bool);
template void Session<PlainStream>::start_slow_reader_clock();
template void Session<PlainStream>::wait_slow_reader_clock();
template void Session<PlainStream>::on_slow_reader_clock();
template void Session<PlainStream>::note_output_taken();
template void Session<PlainStream>::note_output_available();
template void Session<PlainStream>::relay_output(std::string_view);
template bool Session<TlsStream>::over_output_limit() const;
template void Session<TlsStream>::check_output_limit(bool);
template void Session<TlsStream>::start_slow_reader_clock();
template void Session<TlsStream>::wait_slow_reader_clock();
template void Session<TlsStream>::on_slow_reader_clock();
template void Session<TlsStream>::note_output_taken();
template void Session<TlsStream>::note_output_available();
template void Session<TlsStream>::relay_output(std::string_view);

}  // namespace corral::session
