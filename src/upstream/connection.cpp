// Pipelined upstream connection: connect + handshake, batched writes, FIFO reply delivery,
// command timeouts and reconnect with exponential backoff.
#include "upstream/connection.hpp"

#include <algorithm>
#include <cstring>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "metrics/metrics.hpp"
#include "resp/encoder.hpp"
#include "resp/reply_framer.hpp"
#include "upstream/errors.hpp"
#include "upstream/own_addresses.hpp"
#include "upstream/server_pause.hpp"
#include "upstream/server_version.hpp"

namespace corral::upstream {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;

namespace {
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::string_view kClosed = upstream::kErrClosed;
constexpr std::string_view kTimedOut = upstream::kErrTimedOut;
TurnQueue* turn_queue_of(const asio::any_io_executor& executor) {
  const auto* io = executor.target<asio::io_context::executor_type>();
  return io ? &asio::use_service<TurnQueue>(io->context()) : nullptr;
}
}  // namespace

Connection::Connection(const asio::any_io_executor& executor, ConnectionOptions options,
                       metrics::ThreadStats* stats, std::atomic<int>* ready_connections)
    : executor_(executor),
      turns_(turn_queue_of(executor)),
      options_(std::move(options)),
      stats_(stats),
      ready_connections_(ready_connections),
      socket_(executor),
      backoff_timer_(executor),
      broken_(executor),
      read_buffer_(kReadChunk) {}

Connection::~Connection() = default;

void Connection::start() {
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->run(); }, asio::detached);
}

void Connection::close() {
  if (closing_) return;
  closing_ = true;
  backoff_timer_.cancel();
  if (state_ == State::ready) {
    break_connection();
  } else {
    error_code ignored;
    socket_.close(ignored);  // cancels a connect or handshake in progress
  }
}

bool Connection::send(std::string_view command, std::shared_ptr<ReplyTarget> target,
                      std::uint64_t tag, bool exempt_from_timeout) {
  if (closing_ || state_ == State::backoff || state_ == State::closed) return false;
  if (in_flight_.size() >= options_.max_in_flight) return false;
  in_flight_.push_back({std::move(target), tag, tick_, exempt_from_timeout});
  write_buffer_.append(command);
  if (state_ == State::ready && !flushing_) start_flush();
  return true;
}

bool Connection::send_untracked(std::string_view command) {
  if (closing_ || state_ == State::backoff || state_ == State::closed) return false;
  write_buffer_.append(command);
  sent_untracked_ = true;
  if (state_ == State::ready && !flushing_) start_flush();
  return true;
}

bool Connection::send_in_session(SessionCommand kind, std::string_view command,
                                 std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
                                 bool exempt_from_timeout) {
  if (!send(command, std::move(target), tag, exempt_from_timeout)) return false;
  // No write in progress: what is queued (the command, the CLIENT ID a new session link sends
  // first, a transaction's queued commands before its EXEC) is written now instead of at the
  // posted flush. EXEC too: its WATCH check must see the keys before a write another client sends
  // right after it.
  const bool now = kind == SessionCommand::blocking || kind == SessionCommand::exec;
  if (now && state_ == State::ready && writing_.empty() && !tls_) {
    write_queued_now();
  }
  return true;
}

void Connection::write_queued_now() {
  error_code ec;
  // Only this synchronous write is non-blocking: a full socket buffer answers would_block at
  // once, and the rest goes the usual, asynchronous way (a failed write fails there again).
  socket_.non_blocking(true, ec);
  std::size_t written = 0;
  if (!ec) written = socket_.write_some(asio::buffer(write_buffer_), ec);
  write_buffer_.erase(0, written);
  if (!write_buffer_.empty() && !flushing_) start_flush();
}

void Connection::set_unsolicited_target(std::shared_ptr<ReplyTarget> target) {
  unsolicited_ = std::move(target);
}

void Connection::set_state(State next) {
  if (ready_connections_ && (state_ == State::ready) != (next == State::ready)) {
    ready_connections_->fetch_add(next == State::ready ? 1 : -1, std::memory_order_relaxed);
  }
  state_ = next;
  reached_server_ = reached_server_ || next == State::ready;
}

void Connection::fail_all(ErrorKind kind, std::string_view error) {
  // Callbacks may send again (to other connections): detach the queue before calling out.
  auto failed = std::move(in_flight_);
  in_flight_.clear();
  write_buffer_.clear();
  if (stats_ && (kind == ErrorKind::connection_lost || kind == ErrorKind::timeout)) {
    for (std::size_t i = 0; i < failed.size(); ++i) stats_->upstream_reply_lost();
  }
  for (auto& item : failed) item.target->on_error(item.tag, kind, error);
  // A connection that never came up has told its client through the failed commands, unless some
  // were untracked (a RESP3 SUBSCRIBE, confirmed by pushes): only the push target can tell those.
  if (unsolicited_ &&
      (kind != ErrorKind::upstream_unavailable || failed.empty() || sent_untracked_)) {
    auto target = std::move(unsolicited_);
    target->on_error(0, kind, error);
  }
}

void Connection::break_connection() {
  if (state_ != State::ready) return;
  // Leaving `ready` at once stops late completions of this socket from breaking the next one.
  set_state(State::connecting);
  ++generation_;
  error_code ignored;
  socket_.close(ignored);
  broken_.notify();
  if (relay_resumed_) relay_resumed_->notify();  // a held read loop sees its generation end
  resume_relay_input();
}

awaitable<void> Connection::run() {
  auto backoff = options_.backoff_min;
  while (!closing_) {
    set_state(State::connecting);
    bool connected = co_await connect_once();
    if (connected) connected = co_await handshake();
    if (!connected) {
      if (stats_) stats_->upstream_connect_failure();
      if (closing_) {
        fail_all(ErrorKind::closed, kClosed);
      } else {
        fail_all(ErrorKind::upstream_unavailable, upstream::kErrUnavailable);
      }
      if (!options_.reconnect || closing_) break;
      set_state(State::backoff);
      backoff_timer_.expires_after(backoff);
      error_code ignored;
      co_await backoff_timer_.async_wait(asio::redirect_error(use_awaitable, ignored));
      backoff = std::min(backoff * 2, options_.backoff_max);
      continue;
    }
    backoff = options_.backoff_min;
    refusal_.clear();
    set_state(State::ready);
    const std::string own_address = own_addresses().add(socket_);
    if (stats_) stats_->upstream_connected();
    const auto generation = generation_;
    asio::co_spawn(executor_, read_loop(generation), asio::detached);
    asio::co_spawn(executor_, watch_timeouts(generation), asio::detached);
    if (!write_buffer_.empty() && !flushing_) start_flush();
    co_await broken_.wait();
    own_addresses().remove(own_address);
    set_state(State::connecting);
    if (stats_) stats_->upstream_disconnected();
    // Every command queued behind the one that timed out fails with it: say so, since those
    // clients' own commands may have been quick.
    const std::string timed_out =
        fmt::format("{} after {}ms; the connection was reset and the commands queued on it failed",
                    kTimedOut, options_.command_timeout.count());
    if (closing_) {
      fail_all(ErrorKind::closed, kClosed);
    } else if (timed_out_) {
      fail_all(ErrorKind::timeout, timed_out);
    } else {
      fail_all(ErrorKind::connection_lost, upstream::kErrConnectionLost);
    }
    timed_out_ = false;
    // Closed on purpose (an idle user's pool reaped, a shutdown): nothing was lost.
    if (!options_.reconnect || closing_) break;
    spdlog::warn("upstream {}:{} connection lost; reconnecting", options_.server.host,
                 options_.server.port);
  }
  fail_all(ErrorKind::closed, kClosed);
  set_state(State::closed);
}

awaitable<bool> Connection::connect_once() {
  error_code ec;
  tls_.reset();
  socket_ = asio::ip::tcp::socket(executor_);
  // Shared with the deadline's handler, which may already be queued when the connect completes
  // (cancel() cannot recall it): it must not reach into this frame once the frame is gone.
  struct Attempt {
    explicit Attempt(const asio::any_io_executor& executor) : resolver(executor) {}
    asio::ip::tcp::resolver resolver;
    bool expired = false;
    bool finished = false;
  };
  const auto attempt = std::make_shared<Attempt>(executor_);
  asio::steady_timer deadline(executor_);
  deadline.expires_after(options_.connect_timeout);
  deadline.async_wait([this, attempt, self = shared_from_this()](error_code wait_ec) {
    if (wait_ec || attempt->finished) return;
    attempt->expired = true;
    attempt->resolver.cancel();
    error_code ignored;
    socket_.close(ignored);
  });
  auto endpoints = co_await attempt->resolver.async_resolve(
      options_.server.host, std::to_string(options_.server.port),
      asio::redirect_error(use_awaitable, ec));
  if (!ec && !closing_ && !attempt->expired) {
    co_await asio::async_connect(socket_, endpoints, asio::redirect_error(use_awaitable, ec));
  }
  attempt->finished = true;
  deadline.cancel();
  if (ec || closing_ || attempt->expired) {
    spdlog::debug("upstream {}:{} connect failed: {}", options_.server.host, options_.server.port,
                  attempt->expired ? "timed out" : ec.message());
    co_return false;
  }
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  socket_.non_blocking(true, ec);  // write_batch's send returns instead of waiting for room
  read_begin_ = read_end_ = 0;
  if (options_.tls_context) co_return co_await tls_handshake();
  co_return true;
}

// A handshake step that hangs fails at connect_timeout: the socket is closed under it.
void Connection::close_on_expiry(asio::steady_timer& deadline) {
  deadline.expires_after(options_.connect_timeout);
  deadline.async_wait([this, self = shared_from_this()](error_code wait_ec) {
    if (wait_ec) return;
    error_code ignored;
    socket_.close(ignored);
  });
}

awaitable<bool> Connection::tls_handshake() {
  tls_ =
      std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, *options_.tls_context);
  SSL* ssl = tls_->native_handle();
  const auto& name = options_.tls_server_name;
  // Checked by OpenSSL during the handshake when the context verifies peers (verify: true). An
  // IP address (what Sentinels and CLUSTER SHARDS name nodes by) must match an IP SAN: the host
  // check only matches DNS names. It is not sent as SNI, which RFC 6066 keeps for host names.
  error_code not_an_address;
  asio::ip::make_address(name, not_an_address);
  if (!not_an_address) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, name.c_str());
    X509_VERIFY_PARAM_set1_host(SSL_get0_param(ssl), name.c_str(), name.size());
  }
  asio::steady_timer deadline(executor_);
  close_on_expiry(deadline);
  error_code ec;
  co_await tls_->async_handshake(asio::ssl::stream_base::client,
                                 asio::redirect_error(use_awaitable, ec));
  deadline.cancel();
  if (ec || closing_) {
    const long verify = SSL_get_verify_result(ssl);
    refusal_ = "TLS handshake failed: " + ec.message() +
               (verify == X509_V_OK
                    ? std::string()
                    : std::string(" (certificate: ") + X509_verify_cert_error_string(verify) + ")");
    spdlog::warn("upstream {}:{} {}", options_.server.host, options_.server.port, refusal_);
    co_return false;
  }
  co_return true;
}

awaitable<bool> Connection::handshake() {
  std::string commands;
  std::size_t expected = 0;
  // With user_after_select, Corral's own login and its SELECT may fail (its password changed
  // under it, by a CONFIG SET requirepass through it): the user, once logged in, selects.
  std::size_t may_fail = 0;
  const bool user_selects_on_failure = !options_.user_after_select.empty();
  // A user name alone still logs in: `AUTH user ""` is how Redis admits a nopass user, and
  // without it the connection would run as `default`.
  if (!options_.password.empty() || !options_.username.empty()) {
    if (options_.username.empty()) {
      std::string_view argv[] = {"AUTH", options_.password};
      resp::append_command(commands, argv);
    } else {
      std::string_view argv[] = {"AUTH", options_.username, options_.password};
      resp::append_command(commands, argv);
    }
    ++expected;
    may_fail += user_selects_on_failure;
  }
  const auto db = std::to_string(options_.database);
  if (options_.database != 0) {
    std::string_view argv[] = {"SELECT", db};
    resp::append_command(commands, argv);
    ++expected;
    may_fail += user_selects_on_failure;
  }
  if (user_selects_on_failure) {
    std::string_view argv[] = {"AUTH", options_.user_after_select,
                               options_.user_password_after_select};
    resp::append_command(commands, argv);
    ++expected;
  }
  if (options_.readonly) {
    std::string_view argv[] = {"READONLY"};
    resp::append_command(commands, argv);
    ++expected;
  }
  if (options_.protocol == 3) {
    // After AUTH, so HELLO needs no credentials of its own; a server before Redis 6 refuses it
    // and the connection fails rather than silently speaking RESP2 to a RESP3 client.
    std::string_view argv[] = {"HELLO", "3"};
    resp::append_command(commands, argv);
    ++expected;
  }
  if (expected == 0) co_return true;

  asio::steady_timer deadline(executor_);
  close_on_expiry(deadline);
  bool select_failed = false;
  bool done =
      co_await send_handshake(commands, expected, may_fail, options_.protocol == 3, select_failed);
  if (done && select_failed) {
    // Logged in as the user, who selects the database itself (and must be allowed to).
    commands.clear();
    std::string_view argv[] = {"SELECT", db};
    resp::append_command(commands, argv);
    done = co_await send_handshake(commands, 1, 0, false, select_failed);
  }
  deadline.cancel();
  co_return done;
}

awaitable<bool> Connection::send_handshake(const std::string& commands, std::size_t expected,
                                           std::size_t may_fail, bool hello_last,
                                           bool& last_tolerated_failed) {
  error_code ec;
  co_await async_write_all(asio::buffer(commands), asio::redirect_error(use_awaitable, ec));
  for (std::size_t read = 0; !ec && read < expected;) {
    const std::string_view pending(read_buffer_.data() + read_begin_, read_end_ - read_begin_);
    const auto frame = resp::frame_reply(pending);
    if (frame.status == resp::FrameStatus::invalid) break;
    if (frame.status == resp::FrameStatus::complete) {
      if (read < may_fail) {
        // Corral's own login may fail while its SELECT works (a nopass default user): only the
        // SELECT's outcome, the last of them, decides whether the user must select.
        if (read + 1 == may_fail) last_tolerated_failed = pending[0] == '-';
      } else if (pending[0] == '-') {
        refusal_ = "refused the handshake: " + std::string(pending.substr(1, frame.size - 3));
        spdlog::error("upstream {}:{} {}", options_.server.host, options_.server.port, refusal_);
        break;
      }
      // HELLO is the last command of a RESP3 handshake: its map names the server's version.
      if (hello_last && read + 1 == expected) note_hello_reply(pending.substr(0, frame.size));
      read_begin_ += frame.size;
      ++read;
      if (read == expected) co_return true;
      continue;
    }
    ensure_read_space();
    const auto n = co_await async_read(
        asio::buffer(read_buffer_.data() + read_end_, read_buffer_.size() - read_end_),
        asio::redirect_error(use_awaitable, ec));
    read_end_ += n;
  }
  co_return false;
}

void Connection::ensure_read_space() {
  if (read_begin_ == read_end_) read_begin_ = read_end_ = 0;
  if (read_buffer_.size() - read_end_ >= kReadChunk / 4) return;
  if (read_begin_ > 0) {
    std::memmove(read_buffer_.data(), read_buffer_.data() + read_begin_, read_end_ - read_begin_);
    read_end_ -= read_begin_;
    read_begin_ = 0;
  }
  if (read_buffer_.size() - read_end_ < kReadChunk / 4)
    read_buffer_.resize(read_buffer_.size() * 2);
}

awaitable<void> Connection::read_loop(std::uint64_t generation) {
  auto self = shared_from_this();
  while (generation == generation_) {
    while (relay_held_ && generation == generation_) co_await relay_resumed_->wait();
    if (generation != generation_) break;
    ensure_read_space();
    error_code ec;
    std::size_t n = 0;
    if (tls_) {
      n = co_await async_read(
          asio::buffer(read_buffer_.data() + read_end_, read_buffer_.size() - read_end_),
          asio::redirect_error(use_awaitable, ec));
    } else {
      n = co_await reader_.async_read(socket_, asio::redirect_error(use_awaitable, ec));
      unverified_drain_ = reader_.last_read_drained();
    }
    if (generation != generation_) break;
    if (ec) {
      spdlog::debug("upstream read ended: {}", ec.message());
      break_connection();
      break;
    }
    read_end_ += n;
    if (!deliver_replies(generation)) {
      spdlog::error("upstream {}:{} sent a reply Corral cannot frame; resetting the connection",
                    options_.server.host, options_.server.port);
      break_connection();
      break;
    }
  }
}

bool Connection::deliver_replies(std::uint64_t generation) {
  if (relay_ != RelayState::off) {
    const RelayStep step = deliver_relayed();
    if (step != RelayStep::frame_rest) return step == RelayStep::delivered;
  }
  while (read_begin_ < read_end_ && generation == generation_) {
    const std::string_view pending(read_buffer_.data() + read_begin_, read_end_ - read_begin_);
    const auto frame = resp::frame_reply(pending);
    if (frame.status == resp::FrameStatus::need_more) return true;
    if (frame.status == resp::FrameStatus::invalid) return false;
    const auto reply = pending.substr(0, frame.size);
    read_begin_ += frame.size;
    // A push is never the answer to a command: pub/sub messages and tracking invalidations
    // interleave with replies on a RESP3 connection.
    if (reply[0] == '>') {
      if (unsolicited_) unsolicited_->on_reply(0, reply);
      continue;
    }
    if (!in_flight_.empty()) {
      auto item = std::move(in_flight_.front());
      in_flight_.pop_front();
      item.target->on_reply(item.tag, reply);
    } else if (unsolicited_) {
      unsolicited_->on_reply(0, reply);
    } else {
      return false;  // a reply nobody asked for: the stream is out of step
    }
  }
  return true;
}

void Connection::start_flush() {
  flushing_ = true;
  // At the end of this turn of the event loop, so every command queued in the turn leaves in the
  // same write; the turn's one handler runs every connection's and session's write.
  if (turns_) {
    turns_->defer(
        shared_from_this(),
        [](void* self, std::uint64_t generation) {
          static_cast<Connection*>(self)->write_batch(generation);
        },
        generation_);
    return;
  }
  asio::post(executor_, [self = shared_from_this(), generation = generation_] {
    self->write_batch(generation);
  });
}

void Connection::write_batch(std::uint64_t generation) {
  if (write_buffer_.empty() || generation != generation_ || state_ != State::ready) {
    flushing_ = false;
    resume_relay_input();  // all written, or the socket is gone: either way, no longer held
    if (!write_buffer_.empty() && state_ == State::ready) start_flush();
    return;
  }
  writing_.swap(write_buffer_);
  std::size_t sent = 0;
  if (!tls_) {
    // Most batches fit in the socket's buffer: one send now. An asynchronous write would queue
    // its completion behind the reactor, costing the event loop another pass and epoll_wait.
    error_code ec;
    sent = socket_.write_some(asio::buffer(writing_), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) ec = {};
    if (ec || sent == writing_.size()) {
      writing_.clear();
      if (ec) break_connection();
      write_batch(generation);
      return;
    }
  }
  async_write_all(asio::buffer(writing_.data() + sent, writing_.size() - sent),
                  [self = shared_from_this(), generation](error_code ec, std::size_t) {
                    self->writing_.clear();
                    if (ec && generation == self->generation_) self->break_connection();
                    // Commands queued during the write go out next, in one batch.
                    self->write_batch(generation);
                  });
}

awaitable<void> Connection::watch_timeouts(std::uint64_t generation) {
  auto self = shared_from_this();
  // A command times out after kTicks ticks, i.e. between command_timeout and 1.25x of it.
  constexpr std::uint64_t kTicks = 4;
  // Without a command timeout the ticks only look for a hang-up, once a second.
  const bool timeouts = options_.command_timeout.count() > 0;
  const auto tick =
      timeouts ? std::max(options_.command_timeout / static_cast<int>(kTicks), config::Duration(5))
               : config::Duration(1000);
  asio::steady_timer timer(executor_);
  while (generation == generation_) {
    timer.expires_after(tick);
    error_code ec;
    co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
    ++tick_;
    if (server_pause().in_force()) paused_tick_ = tick_;
    if (generation != generation_) continue;
    // A reply and the server's hang-up that came in one wake-up raise no further edge for
    // ReadyRead: found here, once per read that took the socket as drained.
    if (std::exchange(unverified_drain_, false) && peer_hung_up(socket_)) {
      spdlog::debug("upstream read ended: the server closed the connection");
      break_connection();
      break;
    }
    if (!timeouts || in_flight_.empty()) continue;
    const auto& oldest = in_flight_.front();
    if (oldest.exempt_from_timeout || tick_ - std::max(oldest.sent_tick, paused_tick_) <= kTicks) {
      continue;
    }
    spdlog::warn("upstream {}:{} did not answer within {} ms; resetting the connection",
                 options_.server.host, options_.server.port, options_.command_timeout.count());
    if (stats_) stats_->upstream_timeout();
    timed_out_ = true;
    break_connection();
  }
}

}  // namespace corral::upstream
