// Client session, output side: replies put back in request order, one write per client per
// event-loop turn, and the end of the connection once the last reply is out.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include <spdlog/spdlog.h>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "session/session.hpp"
#include "session/worker.hpp"
#include "slowlog/slow_log.hpp"

namespace corral::session {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// Buffers grown by one large reply are given back once they are this big and empty.
constexpr std::size_t kRetainedBuffer = 256 * 1024;
}  // namespace

template <class Stream>
void Session<Stream>::complete(std::uint64_t tag, std::string_view reply,
                               metrics::CommandResult result) {
  const std::size_t index = tag - first_tag_;
  if (tag < first_tag_ || index >= slots_.size()) {
    spdlog::error("client {}: reply for unknown request {} dropped", handler_->client_id(), tag);
    return;
  }
  Slot& slot = slots_[index];
  const auto latency = std::chrono::steady_clock::now() - slot.started;
  worker_.stats.command(slot.metric_id, result, latency);
  if (worker_.slowlog != nullptr && worker_.slowlog->records(latency)) {
    record_slow(slot, tag, latency);
  }
  if (!noted_phases_.empty()) {
    std::erase_if(noted_phases_, [tag](const auto& pair) { return pair.first == tag; });
  }
  if (index != 0) {
    slot.reply.assign(reply);
    slot.ready = true;
    parked_bytes_ += reply.size();
    ++parked_replies_;
    check_output_limit(false);
    return;
  }
  // The common case: the oldest request completes, so its reply goes straight to the output.
  note_output_available();
  output_.append(reply);
  bool close_after = slot.close_after;
  slots_.pop_front();
  ++first_tag_;
  while (!close_after && !slots_.empty() && slots_.front().ready) {
    auto& next = slots_.front();
    output_.append(next.reply);
    parked_bytes_ -= next.reply.size();
    --parked_replies_;
    close_after = next.close_after;
    slots_.pop_front();
    ++first_tag_;
  }
  if (close_after) close_after_flush_ = true;
  if (waiting_for_slots_) {
    waiting_for_slots_ = false;
    if (slots_drained_) slots_drained_->notify();
  }
  want_write();
  check_output_limit(false);
}

template <class Stream>
void Session<Stream>::push(std::string_view bytes) {
  note_output_available();
  output_.append(bytes);
  want_write();
  check_output_limit(true);
}

// Schedules one write for this turn of the event loop, so the replies completed in the turn
// leave together; a session with nothing to send holds no coroutine, timer or buffer for it.
template <class Stream>
void Session<Stream>::want_write() {
  if (writing_now_ || write_posted_ || writes_ended_) return;
  write_posted_ = true;
  worker_.turns.defer(this->shared_from_this(),
                      [](void* self, std::uint64_t) { static_cast<Session*>(self)->write_some(); });
}

template <class Stream>
void Session<Stream>::write_some() {
  write_posted_ = false;
  if (writing_now_ || writes_ended_) return;
  if (closed_) {
    end_writes();
    return;
  }
  if (output_.empty()) {
    if (close_after_flush_ || ((reader_done_ || draining_) && slots_.empty())) end_writes();
    return;
  }
  writing_.swap(output_);
  std::size_t sent = 0;
  if constexpr (std::is_same_v<Stream, PlainStream>) {
    // Most batches fit in the socket's buffer: one send, with no asynchronous operation (and
    // its allocations) unless the socket pushes back.
    error_code ec;
    sent = stream_.write_some(asio::buffer(writing_), ec);
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again) {
      end_writes();
      return;
    }
    if (sent == writing_.size()) {
      written();
      write_some();  // the end, if that was the last reply
      return;
    }
  }
  written_ = sent;
  note_output_taken();
  writing_now_ = true;
  write_rest();
}

// The socket pushed back: the rest of the batch piece by piece, so that a client reading a large
// batch is seen to make progress (the slow-reader clock) and to make room (back-pressure).
template <class Stream>
void Session<Stream>::write_rest() {
  stream_.async_write_some(asio::buffer(writing_.data() + written_, writing_.size() - written_),
                           [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
                             if (ec) {
                               self->writing_now_ = false;
                               self->end_writes();
                               return;
                             }
                             self->written_ += n;
                             self->note_output_taken();
                             if (self->written_ < self->writing_.size()) return self->write_rest();
                             self->writing_now_ = false;
                             self->written();
                             self->write_some();  // what completed during the write, or the end
                           });
}

template <class Stream>
void Session<Stream>::written() {
  // Only client.idle_timeout reads it: no clock read per write batch without one.
  if (worker_.client.idle_timeout.count() > 0) {
    written_at_ = std::chrono::steady_clock::now();
  }
  writing_.clear();
  written_ = 0;
  if (writing_.capacity() > kRetainedBuffer) std::string().swap(writing_);
  note_output_taken();
  // A request/response client ends every write alike (nothing held, the same capacities).
  if (output_shape() != published_output_) publish_output();
}

template <class Stream>
void Session<Stream>::publish_buffers() {
  publish_input();
  publish_output();
}

template <class Stream>
void Session<Stream>::publish_input() {
  ClientBuffers& b = *buffers_;
  published_input_ = input_shape();
  b.store(b.query, input_.pending().size());
  b.store(b.query_free, input_.space_size());
  b.store(b.input_capacity, input_.capacity());
  b.store(b.argv_memory, argv_.capacity() * sizeof(std::string_view));
}

template <class Stream>
void Session<Stream>::publish_output() {
  ClientBuffers& b = *buffers_;
  published_output_ = output_shape();
  // Replies are written from one string while the next batch gathers in the other.
  b.store(b.reply_buffer, output_.capacity() + writing_.capacity());
  b.store(b.output, output_.size() + (writing_.size() - written_));
  b.store(b.parked_replies, parked_replies_);
  b.store(b.parked_bytes, parked_bytes_);
  b.store(b.session_memory, sizeof(*this) + slots_.capacity() * sizeof(Slot));
}

// After the last reply (or a failed write): our FIN; when draining, the last reply and our FIN
// are out, so wait a little for the client's FIN (read by discard_input), so that the close
// sends no reset over replies still in flight.
template <class Stream>
void Session<Stream>::end_writes() {
  writes_ended_ = true;
  if (!closed_) {
    error_code ignored;
    socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  }
  if (draining_ && !closed_ && !reader_done_) {
    constexpr auto kLinger = std::chrono::milliseconds(500);
    linger_ = std::make_unique<asio::steady_timer>(stream_.get_executor(), kLinger);
    linger_->async_wait([self = this->shared_from_this()](const error_code& ec) {
      if (!ec) self->finish_writes();
    });
    return;
  }
  finish_writes();
}

template <class Stream>
void Session<Stream>::finish_writes() {
  if (writes_finished_) return;
  writes_finished_ = true;
  if (linger_) linger_->cancel();
  abort();
  finish_loop();
}

// The class is instantiated in session.cpp; these members are defined here.
#define CORRAL_SESSION_OUTPUT(Stream)                                      \
  template void Session<Stream>::complete(std::uint64_t, std::string_view, \
                                          metrics::CommandResult);         \
  template void Session<Stream>::push(std::string_view);                   \
  template void Session<Stream>::write_rest();                             \
  template void Session<Stream>::want_write();                             \
  template void Session<Stream>::write_some();                             \
  template void Session<Stream>::written();                                \
  template void Session<Stream>::publish_buffers();                        \
  template void Session<Stream>::publish_input();                          \
  template void Session<Stream>::publish_output();                         \
  template void Session<Stream>::end_writes();                             \
  template void Session<Stream>::finish_writes();
CORRAL_SESSION_OUTPUT(PlainStream)
CORRAL_SESSION_OUTPUT(TlsStream)
#undef CORRAL_SESSION_OUTPUT

}  // namespace corral::session
