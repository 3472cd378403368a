// Client session: a read coroutine that frames and dispatches requests, and the bounds that keep
// one client from hurting others. The output side (reply order, writes) is in session_output.cpp.
#include "session/session.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <type_traits>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "cache/clock.hpp"
#include "resp/encoder.hpp"
#include "session/worker.hpp"
#include "slowlog/slow_log.hpp"

namespace corral::session {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;

namespace {
// How often a held request is offered again: short next to any pause an operator sets.
constexpr std::chrono::milliseconds kHeldRetry{5};
}  // namespace

template <class Stream>
Session<Stream>::Session(Stream stream, Worker& worker)
    : stream_(std::move(stream)), worker_(worker) {
  const auto& client = worker_.client;
  limits_.max_bulk_length = client.max_request;
  limits_.max_inline_length = client.max_inline;
  error_code ignored;
  socket().set_option(asio::ip::tcp::no_delay(true), ignored);
}

template <class Stream>
Session<Stream>::~Session() {
  worker_.sessions.erase(this);
}

namespace {
std::string endpoint_text(const asio::ip::tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}
}  // namespace

template <class Stream>
void Session<Stream>::start() {
  Peer peer;
  error_code ec;
  if (const auto remote = socket().remote_endpoint(ec); !ec) peer.addr = endpoint_text(remote);
  if (const auto local = socket().local_endpoint(ec); !ec) peer.laddr = endpoint_text(local);
  std::weak_ptr<Session> weak = this->shared_from_this();
  // The worker rather than an executor copy: every client keeps these two, and a smaller capture
  // makes a smaller allocation.
  peer.close = [weak, &worker = worker_] {
    asio::post(worker.io, [weak] {
      if (auto session = weak.lock()) session->abort();
    });
  };
  peer.close_if_idle = [weak, &worker = worker_](std::chrono::milliseconds idle) {
    asio::post(worker.io, [weak, idle] {
      if (auto session = weak.lock()) session->close_if_idle(idle);
    });
  };
  peer.post = [weak, &worker = worker_](std::function<void(upstream::ReplyTarget&)> deliver) {
    asio::post(worker.io, [weak, deliver = std::move(deliver)] {
      if (auto session = weak.lock(); session && !session->closed_) deliver(*session);
    });
  };
  publish_buffers();
  peer.buffers = buffers_;
  peer.show_buffers = [weak] {
    if (auto session = weak.lock()) session->publish_buffers();
  };
  handler_ = worker_.handler->open_session(peer);
  authenticated_ = handler_->authenticated();
  worker_.stats.client_connected();
  worker_.info.connected_clients.fetch_add(1, std::memory_order_relaxed);
  worker_.info.total_connections.fetch_add(1, std::memory_order_relaxed);
  read_at_ = std::chrono::steady_clock::now();  // a client that never sends is idle from here
  if constexpr (std::is_same_v<Stream, PlainStream>) {
    error_code ignored;
    stream_.non_blocking(true, ignored);  // write_some sends without blocking
  }
  loops_running_ = 2;
  worker_.sessions.insert(this);
  auto self = this->shared_from_this();
  asio::co_spawn(
      stream_.get_executor(), [self] { return self->read_loop(); }, asio::detached);
  // Accepted just before the listener closed: it gets its last replies like the others.
  if (worker_.draining) drain();
}

template <class Stream>
void Session<Stream>::drain() {
  if (closed_) return;
  stop_reading_ = true;
  draining_ = true;
  handler_->drain();
  // A SYNC/PSYNC's verdict may never come now (its link is gone): process_input stops waiting.
  if (slots_drained_) slots_drained_->notify();
  want_write();
}

// Requests that arrive while draining are read and dropped until the client closes: closing a
// socket with unread bytes sends a reset, and a reset can destroy replies the client has not read
// yet.
template <class Stream>
awaitable<void> Session<Stream>::discard_input() {
  error_code ec;
  std::array<char, 1024> discarded;
  while (!ec && !closed_) {
    co_await stream_.async_read_some(asio::buffer(discarded),
                                     asio::redirect_error(use_awaitable, ec));
  }
}

// Plain TCP reads through upstream::ReadyRead: the bytes land in the input buffer, taken from
// the thread's cache only when the socket is readable and given back once every request in it
// was handled, and a read that finds less than the buffer's room waits for the next edge rather
// than trying again (the EAGAIN read a drained socket would otherwise cost). A read that filled
// the room reads again at once, through the event loop, so one flooding client does not starve
// the thread's others. The loop is here rather than in a coroutine of its own: every idle client
// holds its read loop's frames.
template <class Stream>
awaitable<void> Session<Stream>::read_loop() {
  auto self = this->shared_from_this();
  if constexpr (std::is_same_v<Stream, PlainStream>) {
    error_code ec;
    while (!stop_reading_ && !closed_) {
      keep_pending_argv();
      const auto n = co_await reader_.async_read(stream_, asio::redirect_error(use_awaitable, ec));
      if (ec || closed_) break;
      input_.commit(n);
      unverified_drain_ = reader_.last_read_drained();
      quiet_sweeps_ = 0;
      if (!process_read()) co_await process_input();
      keep_pending_argv();
      input_.release();
      if (input_shape() != published_input_) publish_input();
    }
  } else {
    co_await read_tls();
  }
  // The client closed or reset its side: nothing more will come, and a blocked command or a
  // subscription would hold this session (and its upstream connection) until it ends, which for
  // BLPOP k 0 is never. Redis lets such a client go at once.
  if (!stop_reading_ && !closed_) {
    const bool blocked = handler_->blocked();
    handler_->drain();
    // Redis frees a client that leaves while blocked and sends it nothing: error replies for the
    // ended block (and the commands queued behind it) would reach a client that half-closed, and
    // a client library would take them as answers instead of resending on its next connection.
    if (blocked) abort();
  }
  if (draining_) co_await discard_input();
  reader_done_ = true;
  if (linger_) {
    finish_writes();  // the client's FIN came during the linger
  } else {
    want_write();
  }
  finish_loop();
}

// Called by the worker's periodic sweep: the one case ReadyRead's guess misses is a client whose
// last bytes and hang-up came in one wake-up; it is found here, once per guess.
template <class Stream>
void Session<Stream>::check_hangup() {
  if constexpr (std::is_same_v<Stream, PlainStream>) {
    if (!unverified_drain_ || closed_ || stop_reading_) return;
    // Only a client quiet for a whole sweep interval is checked: one that keeps sending is
    // heard from anyway, and a check per request would cost what ReadyRead saves.
    if (++quiet_sweeps_ < 2) return;
    unverified_drain_ = false;
    if (!upstream::peer_hung_up(stream_)) return;
    // A wait on the socket's (empty) error queue makes the reactor re-arm epoll for it, which
    // reports the socket readable again: the pending read then runs and meets the end of the
    // stream. (A read wait would only queue behind the pending read; a cancel would also end a
    // write still carrying replies the half-closed client waits for.) The wait itself ends
    // when the socket closes.
    stream_.async_wait(PlainStream::wait_error, [](const error_code&) {});
  }
}

template <class Stream>
awaitable<void> Session<Stream>::read_tls() {
  if constexpr (std::is_same_v<Stream, TlsStream>) {
    error_code ec;
    {
      // A client that stalls mid-handshake (or speaks plain text and waits) is cut here.
      asio::steady_timer deadline(stream_.get_executor(), worker_.settings.tls.handshake_timeout);
      deadline.async_wait([this](const error_code& timer_ec) {
        if (!timer_ec) abort();
      });
      co_await stream_.async_handshake(asio::ssl::stream_base::server,
                                       asio::redirect_error(use_awaitable, ec));
    }
    if (ec || closed_) {
      worker_.stats.tls_handshake_failed();
      spdlog::debug("client {}: TLS handshake failed: {}", handler_->client_id(), ec.message());
      co_return;
    }
    while (!stop_reading_ && !closed_) {
      keep_pending_argv();
      const auto n =
          co_await stream_.async_read_some(asio::buffer(input_.space(), input_.space_size()),
                                           asio::redirect_error(use_awaitable, ec));
      if (ec || closed_) break;
      input_.commit(n);
      if (!process_read()) co_await process_input();
      if (input_shape() != published_input_) publish_input();
    }
  }
  co_return;
}

// The requests of one read, under one clock reading: the read's time, every cache lookup's "now"
// and the clients' last-active time (see cache::TurnTime for the staleness bound). The
// coroutine's part (process_input) awaits, so it reads the clock afresh.
template <class Stream>
bool Session<Stream>::process_read() {
  const cache::TurnTime turn;
  read_at_ = turn.now();
  return process_ready_input();
}

// Dispatches the complete requests in the input without a coroutine frame (a frame is an
// allocation per read): it stops, leaving the request unconsumed, at the first one that is
// partial, bad, or that dispatch_now cannot take, for process_input.
template <class Stream>
bool Session<Stream>::process_ready_input() {
  const std::shared_ptr<upstream::ReplyTarget> target = this->shared_from_this();
  while (!stop_reading_ && !closed_ && !input_.empty()) {
    if (relaying_) return relay_input();
    if (relay_verdict_due_) return false;   // process_input waits for it
    if (over_output_limit()) return false;  // process_input waits for room
    const std::string_view pending = input_.pending();
    const auto parsed = resp::parse_request(
        pending, authenticated_ ? limits_ : resp::kBeforeAuthLimits, argv_, scratch_);
    if (parsed.status != resp::ParseStatus::ok) return false;
    if (!argv_.empty()) {
      const std::string_view raw = pending.substr(0, parsed.consumed);
      if (!dispatch_now(resp::Request{argv_, parsed.inline_form ? std::string_view() : raw},
                        target)) {
        return false;
      }
    }
    input_.consume(parsed.consumed);
    if (!authenticated_) authenticated_ = handler_->authenticated();
  }
  return true;
}

// Where process_ready_input stopped: the front request is partial, bad, or must wait (full
// pipeline, tunnel, a retry); once it is handled the rest goes through process_ready_input again.
template <class Stream>
awaitable<void> Session<Stream>::process_input() {
  // One reference for the whole batch: handlers keep it for replies that complete later.
  const std::shared_ptr<upstream::ReplyTarget> target = this->shared_from_this();
  do {
    // What follows a SYNC/PSYNC is the replica's stream or requests, as the server decides. The
    // wait is slots_drained's, as for settling(): "look again", not a slot count.
    while (relay_verdict_due_ && !stop_reading_ && !closed_) co_await slots_drained().wait();
    if (relaying_) {
      if (!closed_ && !input_.empty()) relay_input();
      while (!closed_ && relay_input_held()) co_await relay_input_room().wait();
      co_return;
    }
    // Back-pressure: a client behind on its replies sends no more work until it catches up (or
    // the slow-reader clock cuts it); its requests wait in the socket, not in Corral.
    while (over_output_limit() && !closed_) co_await output_room().wait();
    if (stop_reading_ || closed_ || input_.empty()) co_return;
    const std::string_view pending = input_.pending();
    const auto parsed = resp::parse_request(
        pending, authenticated_ ? limits_ : resp::kBeforeAuthLimits, argv_, scratch_);
    if (parsed.status == resp::ParseStatus::need_more) {
      // The parser bounds each argument; this bounds a whole request still arriving.
      const std::size_t max_request =
          authenticated_ ? worker_.client.max_request : resp::kMaxRequestBeforeAuth;
      if (pending.size() > max_request) {
        reject_protocol("Protocol error: request larger than client.max_request");
      }
      co_return;
    }
    if (parsed.status != resp::ParseStatus::ok) {
      reject_protocol(parsed.error);
      co_return;
    }
    if (!argv_.empty()) {
      const std::string_view raw = pending.substr(0, parsed.consumed);
      if (!dispatch_now(resp::Request{argv_, parsed.inline_form ? std::string_view() : raw},
                        target)) {
        co_await dispatch(raw, parsed.inline_form, target);
      }
    }
    input_.consume(parsed.consumed);
    if (!authenticated_) authenticated_ = handler_->authenticated();
  } while (!process_ready_input());
}

template <class Stream>
upstream::AsyncEvent& Session<Stream>::output_room() {
  if (!output_room_) output_room_ = std::make_unique<upstream::AsyncEvent>(stream_.get_executor());
  return *output_room_;
}

template <class Stream>
upstream::AsyncEvent& Session<Stream>::slots_drained() {
  if (!slots_drained_)
    slots_drained_ = std::make_unique<upstream::AsyncEvent>(stream_.get_executor());
  return *slots_drained_;
}

template <class Stream>
bool Session<Stream>::dispatch_now(const resp::Request& request,
                                   const std::shared_ptr<upstream::ReplyTarget>& target) {
  if (handler_->tunneling() || handler_->settling() ||
      slots_.size() >= worker_.client.max_pipeline || closed_) {
    return false;
  }
  // A handler that asks for a retry has done nothing yet: the coroutine asks again after waiting.
  const auto action = handle_in_slot(request, handler_->classify(request), target);
  return action != Action::wait_then_retry && action != Action::drain_then_retry;
}

template <class Stream>
Action Session<Stream>::handle_in_slot(const resp::Request& request, const Classified& classified,
                                       const std::shared_ptr<upstream::ReplyTarget>& target) {
  const std::uint64_t tag = first_tag_ + slots_.size();
  auto& slot = slots_.emplace_back();
  slot.started = read_at_;
  slot.metric_id = classified.metric_id;
  slot.queued_us = std::exchange(queued_us_, 0);
  if (worker_.slowlog != nullptr) {
    // An inline request's arguments are unescaped into a scratch string the next one reuses.
    if (request.raw.empty()) {
      slot.argv.capture(request.argv);
    } else {
      slot.argv.refer(request.raw);
      ++unkept_argv_;
    }
  }
  const auto action = handler_->handle(request, classified, tag, target, slots_.size() - 1);
  if (action == Action::wait_then_retry || action == Action::drain_then_retry) {
    slots_.pop_back();
  } else if (action == Action::relay) {
    slots_.pop_back();
    start_relay(classified.metric_id);
  } else {
    after_handle(action, tag);
  }
  return action;
}

template <class Stream>
void Session<Stream>::keep_pending_argv() {
  if (unkept_argv_ == 0) return;
  // Every waiting slot, not only the newest few: keep() of a kept slot is a no-op, and a count
  // of "the newest N" missed a slot once (an ASan use-after-free in the differential test, when
  // the input block had gone to another client).
  for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i].argv.keep();
  unkept_argv_ = 0;
}

template <class Stream>
awaitable<void> Session<Stream>::dispatch(std::string_view raw, bool inline_form,
                                          std::shared_ptr<upstream::ReplyTarget> target) {
  const resp::Request request{argv_, inline_form ? std::string_view() : raw};
  for (;;) {
    // A barrier of the tunnel's is out: what this request means depends on its answer.
    while (handler_->settling() && !closed_) co_await slots_drained().wait();
    if (closed_) co_return;
    if (!handler_->tunneling()) break;
    std::string own_reply;
    const auto action = handler_->handle_tunnel(request, own_reply);
    if (action == Action::drain_then_retry) continue;
    worker_.stats.command(handler_->classify(request).metric_id, metrics::CommandResult::ok, {});
    if (!own_reply.empty()) push(own_reply);
    if (action == Action::close_after_reply) {
      stop_reading_ = true;
      close_after_flush_ = true;
      want_write();
    }
    co_return;
  }
  bool waited = false;
  while (slots_.size() >= worker_.client.max_pipeline && !closed_) {
    waiting_for_slots_ = true;
    waited = true;
    co_await slots_drained().wait();
  }
  const auto classified = handler_->classify(request);
  for (;; waited = true) {
    if (closed_) co_return;
    // Only a request that had to wait pays for a clock reading, for the slowlog's queued phase.
    if (waited) {
      queued_us_ = slowlog::saturated_micros(std::chrono::duration_cast<std::chrono::microseconds>(
                                                 std::chrono::steady_clock::now() - read_at_)
                                                 .count());
    }
    const auto action = handle_in_slot(request, classified, target);
    if (action == Action::wait_then_retry) {
      // Held by the handler (CLIENT PAUSE): later requests wait behind this one, so the client's
      // commands still run in the order it sent them.
      asio::steady_timer timer(stream_.get_executor(), kHeldRetry);
      error_code ignored;
      co_await timer.async_wait(asio::redirect_error(use_awaitable, ignored));
      continue;
    }
    if (action == Action::drain_then_retry) {
      while (!slots_.empty() && !closed_) {
        waiting_for_slots_ = true;
        co_await slots_drained().wait();
      }
      continue;
    }
    co_return;
  }
}

template <class Stream>
void Session<Stream>::after_handle(Action action, std::uint64_t tag) {
  if (action != Action::close_after_reply) return;
  stop_reading_ = true;
  if (tag >= first_tag_) {
    slots_[tag - first_tag_].close_after = true;
  } else {
    close_after_flush_ = true;
    want_write();
  }
}

template <class Stream>
void Session<Stream>::on_reply(std::uint64_t tag, std::string_view reply) {
  if (closed_) return;
  if (tag == 0 && (relaying_ || relay_verdict_due_)) {
    relay_reply(reply);
    return;
  }
  if (tag == 0) {
    if (handler_->takes_unsolicited(reply)) {
      if (slots_drained_) slots_drained_->notify();  // wakes a request waiting on settling()
      return;
    }
    push(reply);
    handler_->on_unsolicited(reply);
    return;
  }
  const bool is_error = !reply.empty() && reply.front() == '-';
  complete(tag, reply, is_error ? metrics::CommandResult::error : metrics::CommandResult::ok);
}

template <class Stream>
void Session<Stream>::on_failure(std::uint64_t tag, std::string_view error) {
  if (closed_) return;
  if (tag == 0 && (relaying_ || relay_verdict_due_)) {
    if (relay_verdict_due_) settle_relay(metrics::CommandResult::unavailable);
    // The upstream ended the stream. A replica tells that from the closed connection (an error
    // line inside an RDB payload would not parse); one that got nothing yet learns why.
    if (!relayed_output_) {
      std::string failed;
      resp::append_error(failed, error);
      push(failed);
    }
    stop_reading_ = true;
    close_after_flush_ = true;
    want_write();
    return;
  }
  std::string line;
  resp::append_error(line, error);
  if (tag == 0) {
    // The client's subscriptions or MONITOR died with their connection: tell it, then hang up,
    // as Redis itself going away would.
    push(line);
    stop_reading_ = true;
    close_after_flush_ = true;
    return;
  }
  complete(tag, line, metrics::CommandResult::unavailable);
}

template <class Stream>
void Session<Stream>::note_phases(std::uint64_t tag, const slowlog::Phases& phases) {
  const std::size_t index = tag - first_tag_;
  if (closed_ || tag < first_tag_ || index >= slots_.size()) return;
  noted_phases_.emplace_back(tag, phases);
}

template <class Stream>
void Session<Stream>::record_slow(const Slot& slot, std::uint64_t tag,
                                  std::chrono::nanoseconds latency) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(latency).count();
  slowlog::SlowEntry entry;
  entry.unix_seconds = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  entry.duration_us = static_cast<std::uint64_t>(micros);
  entry.argv = slot.argv.redis_argv();
  entry.client_addr = handler_->client_addr();
  entry.client_name = handler_->client_name();
  const auto noted = std::find_if(noted_phases_.begin(), noted_phases_.end(),
                                  [tag](const auto& pair) { return pair.first == tag; });
  if (noted != noted_phases_.end()) entry.phases = noted->second;
  entry.phases[slowlog::Phase::queued] = slot.queued_us;
  // What no layer measured went to the upstream (forwarded) or to the cache's own work.
  const std::uint64_t measured = entry.phases.total();
  const auto rest = slowlog::saturated_micros(static_cast<std::int64_t>(entry.duration_us) -
                                              static_cast<std::int64_t>(measured));
  entry.phases[noted != noted_phases_.end() ? slowlog::Phase::cache : slowlog::Phase::upstream] +=
      rest;
  worker_.slowlog->record(worker_.index, std::move(entry));
}

template <class Stream>
void Session<Stream>::reject_protocol(std::string_view error) {
  worker_.stats.protocol_error();
  spdlog::debug("client {}: {}", handler_->client_id(), error);
  std::string line;
  resp::append_error(line, std::string("ERR ") + std::string(error));
  const std::uint64_t tag = first_tag_ + slots_.size();
  auto& slot = slots_.emplace_back();
  slot.started = std::chrono::steady_clock::now();
  slot.metric_id = worker_.handler->protocol_error_metric();
  slot.close_after = true;
  stop_reading_ = true;
  complete(tag, line, metrics::CommandResult::error);
}

template <class Stream>
void Session<Stream>::abort() {
  if (closed_) return;
  closed_ = true;
  stop_reading_ = true;
  error_code ignored;
  socket().close(ignored);
  if (slow_reader_clock_) slow_reader_clock_->cancel();
  want_write();
  if (slots_drained_) slots_drained_->notify();
  if (output_room_) output_room_->notify();
  if (relay_input_room_) relay_input_room_->notify();
}

template <class Stream>
void Session<Stream>::close_if_idle(std::chrono::milliseconds idle) {
  if (!slots_.empty() || !output_.empty() || !writing_.empty()) return;
  const auto last = std::max(read_at_, written_at_);
  if (std::chrono::steady_clock::now() - last < idle) return;
  spdlog::debug("client {}: idle for more than client.idle_timeout; disconnecting",
                handler_->client_id());
  abort();
}

template <class Stream>
void Session<Stream>::finish_loop() {
  if (--loops_running_ > 0) return;
  worker_.sessions.erase(this);
  handler_->end_session();
  worker_.stats.client_disconnected();
  worker_.info.connected_clients.fetch_sub(1, std::memory_order_relaxed);
}

template class Session<PlainStream>;
template class Session<TlsStream>;

}  // namespace corral::session
