// One client connection: reads and frames requests, hands them to its ClientHandler, and writes
// the replies in request order however they complete (local, upstream, cache). Templated on the
// stream, so plain TCP pays nothing for TLS: PlainSession and TlsSession below.
#pragma once

#include <utility>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include "metrics/metrics.hpp"
#include "resp/request_parser.hpp"
#include "session/client_buffers.hpp"
#include "session/drainable.hpp"
#include "session/handler.hpp"
#include "session/input_buffer.hpp"
#include "session/slot_queue.hpp"
#include "slowlog/argv_head.hpp"
#include "slowlog/phases.hpp"
#include "upstream/async_event.hpp"
#include "upstream/ready_read.hpp"
#include "upstream/reply_target.hpp"

namespace corral::session {

struct Worker;

template <class Stream>
class Session : public upstream::ReplyTarget,
                public Drainable,
                public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, Worker& worker);
  ~Session() override;

  void start();
  // Stops reading; the requests already read are answered, then the connection closes.
  void drain() override;
  void check_hangup() override;

  void on_reply(std::uint64_t tag, std::string_view reply) override;
  void on_failure(std::uint64_t tag, std::string_view error) override;
  void note_phases(std::uint64_t tag, const slowlog::Phases& phases) override;

 private:
  // A request's place in the reply order. Replies that arrive before their turn wait here.
  struct Slot {
    std::string reply;
    std::chrono::steady_clock::time_point started;
    std::uint32_t metric_id = 0;
    bool ready = false;
    bool close_after = false;
    // For the slowlog (slowlog.enabled): what the request was (pointing into input_ until
    // keep_pending_argv), and how long it was queued.
    std::uint32_t queued_us = 0;
    slowlog::ArgvHead argv;
  };

  // The input buffer's room, taken only once bytes are there: an idle client holds no buffer.
  struct InputSpace final : upstream::ReadSpace {
    explicit InputSpace(InputBuffer& buffer) : input(buffer) {}
    boost::asio::mutable_buffer read_space() override {
      return {input.space(), input.space_size()};
    }
    void nothing_read() override { input.release(); }
    InputBuffer& input;
  };

  // Plain TCP: one recv per wake-up (upstream::ReadyRead), no buffer held while idle.
  boost::asio::awaitable<void> read_loop();
  // TLS: the handshake (bounded by tls.handshake_timeout), then reads through the stream, whose
  // engine may hold decrypted bytes the socket no longer shows as readable.
  boost::asio::awaitable<void> read_tls();
  auto& socket() { return stream_.lowest_layer(); }
  void want_write();
  void write_some();
  void write_rest();
  void written();  // a batch is out
  void end_writes();
  void finish_writes();
  boost::asio::awaitable<void> discard_input();
  upstream::AsyncEvent& slots_drained();
  upstream::AsyncEvent& output_room();
  // Dispatches every complete request in the input buffer; suspends for back-pressure.
  boost::asio::awaitable<void> process_input();
  // process_ready_input for the requests a read brought, under one clock reading (a TurnTime).
  bool process_read();
  // The common case of process_input, with no coroutine frame: true when every complete request
  // was dispatched; false when one needs process_input (back-pressure, a partial or bad one).
  bool process_ready_input();
  // The common case without a coroutine frame: false when the request must wait (tunnel,
  // full pipeline, a handler that asks for a retry), for dispatch() to handle it.
  bool dispatch_now(const resp::Request& request,
                    const std::shared_ptr<upstream::ReplyTarget>& target);
  boost::asio::awaitable<void> dispatch(std::string_view raw, bool inline_form,
                                        std::shared_ptr<upstream::ReplyTarget> target);
  // Takes a reply slot and hands the request over; a retry action gives the slot back.
  Action handle_in_slot(const resp::Request& request, const Classified& classified,
                        const std::shared_ptr<upstream::ReplyTarget>& target);
  void after_handle(Action action, std::uint64_t tag);
  // Action::relay (session_relay.cpp): the client's later bytes wait unread for the handler's
  // verdict; accepted, the connection carries raw bytes both ways from then on.
  void start_relay(std::uint32_t metric_id);
  // Bytes with tag 0 while a relay is due or running: keep-alives, the refusal, the stream.
  void relay_reply(std::string_view bytes);
  // Asks the handler while its verdict is due; once it is known, counts the request and lets
  // process_input go on with the client's bytes (settle_relay).
  RelayVerdict take_relay_verdict();
  void settle_relay(metrics::CommandResult result);
  // Relay mode: hands every byte read to the handler; false when it cannot go on (closed), or
  // when the upstream holds more of them unwritten than it should (process_input then waits).
  bool relay_input();
  bool relay_input_held();
  upstream::AsyncEvent& relay_input_room();
  // Relay mode: the upstream's bytes for the client; past client.max_output_buffer the upstream
  // side is held (session_backpressure.cpp) instead of the client being cut, as for pushes.
  void relay_output(std::string_view bytes);
  void complete(std::uint64_t tag, std::string_view reply, metrics::CommandResult result);
  void record_slow(const Slot& slot, std::uint64_t tag, std::chrono::nanoseconds latency);
  // Before input_'s bytes are reused (a read into it, or its release): the slowlog's copy of
  // each request still waiting for its reply, the only ones that may yet be recorded.
  void keep_pending_argv();
  void push(std::string_view bytes);
  // Shows the buffers' sizes to CLIENT LIST: at the start, after each read's requests (the
  // input's) and each write (the output's) when they changed, and all of them when the client
  // asks CLIENT LIST/INFO itself (Peer), so that its own line counts its own request's bytes, as
  // Redis's does.
  void publish_buffers();
  void publish_input();
  void publish_output();
  std::size_t input_shape() const { return input_.capacity() + input_.pending().size(); }
  std::size_t output_shape() const {
    return output_.capacity() + writing_.capacity() + output_.size() + writing_.size() +
           parked_bytes_ + slots_.capacity();
  }
  void reject_protocol(std::string_view error);
  // Reply bytes held for the client: queued, being written (what the socket has not taken yet),
  // and parked in slots.
  std::size_t buffered() const {
    return output_.size() + (writing_.size() - written_) + parked_bytes_;
  }
  bool over_output_limit() const;
  // Past client.max_output_buffer (session_backpressure.cpp): pushes cut the client (nothing to
  // hold back), replies make process_input stop reading requests and start the slow-reader clock.
  void check_output_limit(bool from_push);
  void start_slow_reader_clock();
  void wait_slow_reader_clock();
  void on_slow_reader_clock();
  // The writer took bytes off the output: wakes process_input once under the limit.
  void note_output_taken();
  void note_output_available();
  void abort();
  void close_if_idle(std::chrono::milliseconds idle);
  void finish_loop();

  Stream stream_;
  Worker& worker_;
  std::unique_ptr<ClientHandler> handler_;
  resp::RequestLimits limits_;

  InputBuffer input_;
  InputSpace input_space_{input_};
  upstream::ReadyRead reader_{input_space_};
  std::vector<std::string_view> argv_;
  std::string scratch_;

  std::shared_ptr<ClientBuffers> buffers_ = std::make_shared<ClientBuffers>();
  std::size_t parked_replies_ = 0;    // how many replies parked_bytes_ holds (CLIENT LIST's oll)
  std::size_t published_input_ = 0;   // input_shape() when last published
  std::size_t published_output_ = 0;  // output_shape() when last published

  SlotQueue<Slot> slots_;
  std::size_t unkept_argv_ = 0;   // newest slots whose argv still points into input_
  std::uint64_t first_tag_ = 1;   // tag 0 marks replies that answer no request (pushes)
  std::size_t parked_bytes_ = 0;  // reply bytes waiting in slots for their turn
  std::string output_;            // replies in order, not yet handed to the socket
  std::string writing_;           // the batch being written
  std::chrono::steady_clock::time_point read_at_;     // when the requests being parsed arrived
  std::chrono::steady_clock::time_point written_at_;  // when the last reply batch was written

  // Made by the first request that waits for room in the pipeline (rare): an idle client
  // holds no timer for it.
  std::unique_ptr<upstream::AsyncEvent> slots_drained_;
  // Back-pressure, made when a client first goes over client.max_output_buffer (rare).
  std::unique_ptr<upstream::AsyncEvent> output_room_;       // buffered() fell to the limit
  std::unique_ptr<upstream::AsyncEvent> relay_input_room_;  // relay_input_held() let go
  std::unique_ptr<boost::asio::steady_timer> slow_reader_clock_;
  std::chrono::steady_clock::time_point taken_at_;  // the client last took bytes (clock running)
  std::size_t written_ = 0;                         // bytes of writing_ the socket took
  bool slow_reader_clock_running_ = false;
  // The deadline found no progress once and looks again after what is already queued has run.
  bool slow_reader_second_look_ = false;
  bool waiting_for_slots_ = false;
  bool authenticated_ = true;  // false until the handler says the client passed AUTH
  bool stop_reading_ = false;
  bool draining_ = false;  // SIGTERM: answer what was read, then close
  bool close_after_flush_ = false;
  bool reader_done_ = false;
  bool relaying_ = false;           // Action::relay: bytes pass through unparsed both ways
  bool relay_verdict_due_ = false;  // Action::relay, and the handler's verdict not known yet
  bool relayed_output_ = false;     // some of the upstream's stream reached the client
  bool relay_held_ = false;         // the client is past max_output_buffer: the upstream side waits
  bool closed_ = false;
  int loops_running_ = 0;      // the reader and the writer, each until it finished
  bool writing_now_ = false;   // an async_write of writing_ is in flight
  bool write_posted_ = false;  // write_some is queued for this turn
  bool writes_ended_ = false;  // the last reply went (or a write failed): FIN, then the end
  bool writes_finished_ = false;
  std::unique_ptr<boost::asio::steady_timer> linger_;  // draining: waiting for the client's FIN
  bool unverified_drain_ = false;      // the last read was taken as draining the socket
  std::uint8_t quiet_sweeps_ = 0;      // hang-up sweeps since that read
  std::uint32_t queued_us_ = 0;        // how long the request being handed over waited (dispatch())
  std::uint32_t relay_metric_id_ = 0;  // the SYNC/PSYNC's, counted once its verdict is known
  // Phases told by the cache layer (note_phases), by tag: rare (misses), so kept beside the
  // slots rather than in each one.
  std::vector<std::pair<std::uint64_t, slowlog::Phases>> noted_phases_;
};

using PlainStream = boost::asio::ip::tcp::socket;
using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
using PlainSession = Session<PlainStream>;
using TlsSession = Session<TlsStream>;
extern template class Session<PlainStream>;
extern template class Session<TlsStream>;

}  // namespace corral::session
