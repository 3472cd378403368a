// One pipelined RESP connection to an upstream Redis, shared by many clients of one io thread:
// commands from all of them go out in batched writes, replies come back in FIFO order.
#pragma once

#include <utility>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "config/settings.hpp"
#include "upstream/async_event.hpp"
#include "upstream/fifo_queue.hpp"
#include "upstream/link.hpp"
#include "upstream/ready_read.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/turn_queue.hpp"

namespace corral::metrics {
class ThreadStats;
}

namespace corral::upstream {

struct ConnectionOptions {
  config::Endpoint server;
  std::string username;
  std::string password;
  int database = 0;
  config::Duration connect_timeout{1000};
  config::Duration command_timeout{2000};  // 0: no timeout
  std::size_t max_in_flight = 65536;
  config::Duration backoff_min{50};
  config::Duration backoff_max{2000};
  bool reconnect =
      true;  // shared connections reconnect; dedicated ones end with their first failure
  // rediss://: the handshake runs inside the connect deadline; server_name is sent as SNI and
  // verified against the certificate when the context verifies peers.
  std::shared_ptr<boost::asio::ssl::context> tls_context;
  std::string tls_server_name;
  // 3: the handshake sends HELLO 3, and replies are RESP3 (passed to RESP3 clients untouched).
  int protocol = 2;
  // A cluster replica serves reads only after READONLY (sent with the handshake).
  bool readonly = false;
  // Set: the handshake selects `database` as the user above (Corral's own), then logs in as this
  // upstream ACL user, who so keeps a database it may not SELECT, as Redis keeps a client's
  // database across AUTH.
  std::string user_after_select;
  std::string user_password_after_select;
};

// The options every connection to `upstream` shares; TLS contexts are built once per process.
ConnectionOptions connection_options(const config::UpstreamSettings& upstream, int database,
                                     bool reconnect);
// The same for one node of a cluster: credentials and TLS as configured for the seeds.
ConnectionOptions node_connection_options(const config::UpstreamSettings& upstream,
                                          const config::Endpoint& node, bool reconnect);

// Final, so calls through a Connection& stay direct; the proxy reaches it through Link.
class Connection final : public Link, public std::enable_shared_from_this<Connection> {
 public:
  // `ready_connections`, when given, counts connections in the ready state (for /readyz).
  Connection(const boost::asio::any_io_executor& executor, ConnectionOptions options,
             metrics::ThreadStats* stats, std::atomic<int>* ready_connections = nullptr);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();
  // Fails every pending command and stops for good.
  void close() override;

  // Queues one complete RESP command; its outcome goes to target->on_*(tag). Returns false, without
  // queueing, when the connection cannot take it now (backing off, closed, or max_in_flight
  // reached): the caller answers for that command. Commands queued while connecting wait for the
  // connection.
  bool send(std::string_view command, std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
            bool exempt_from_timeout = false) override;
  // For subscribed mode and MONITOR: replies that match no tracked command go to `target` with tag
  // 0. RESP3 pushes (`>`) always go there, never to a tracked command (dropped when none is set).
  void set_unsolicited_target(std::shared_ptr<ReplyTarget> target) override;
  bool send_untracked(std::string_view command) override;
  // A blocking command or an EXEC is written before the call returns when no write is in
  // progress: Redis serves blocked clients, and checks an EXEC's watched keys, in the order
  // commands reach it, and a command sent right after it by another client (often through another
  // io thread's connection) must not overtake it. Any other kind is send().
  bool send_in_session(SessionCommand kind, std::string_view command,
                       std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
                       bool exempt_from_timeout) override;

  // The server's bytes go to the unsolicited target as they come (see Link); a command
  // timeout no longer applies, nothing being tracked (connection_relay.cpp).
  bool start_raw_relay() override;
  RelayState relay_state() const override { return relay_; }
  void hold_raw_relay(bool held) override;
  bool hold_relay_input(std::size_t limit, std::function<void()> resume) override;

  State state() const override { return state_; }
  bool reached_server() const override { return reached_server_; }
  // Counts the sockets connected so far: a new value means a reconnect.
  std::uint64_t generation() const { return generation_; }
  // The io thread the connection lives on: awaitable calls on it run there.
  const boost::asio::any_io_executor& executor() const { return executor_; }
  std::size_t in_flight() const override { return in_flight_.size(); }
  // Why the last connection attempt failed when the server or the TLS peer refused it (a wrong
  // password's WRONGPASS, a certificate that does not verify); empty otherwise. The commands it
  // failed got the generic kErrUnavailable, which callers match on.
  const std::string& refusal() const { return refusal_; }

 private:
  struct InFlight {
    std::shared_ptr<ReplyTarget> target;
    std::uint64_t tag;
    std::uint64_t sent_tick;  // watch_timeouts' tick count when queued: no clock read per command
    bool exempt_from_timeout;
  };

  boost::asio::awaitable<void> run();
  boost::asio::awaitable<bool> connect_once();
  boost::asio::awaitable<bool> handshake();
  // Writes `commands` and reads their `expected` replies. The first `may_fail` may be errors
  // (`last_tolerated_failed` says whether the last of them was); any other error refuses the
  // connection. True when every reply came.
  boost::asio::awaitable<bool> send_handshake(const std::string& commands, std::size_t expected,
                                              std::size_t may_fail, bool hello_last,
                                              bool& last_tolerated_failed);
  // Each connected socket is one generation; loops of an older generation stop by themselves.
  boost::asio::awaitable<void> read_loop(std::uint64_t generation);
  // Times commands out (command_timeout) and checks for a hang-up ReadyRead could not see.
  boost::asio::awaitable<void> watch_timeouts(std::uint64_t generation);
  // Frames and delivers every complete reply in the read buffer; false on a protocol violation.
  bool deliver_replies(std::uint64_t generation);
  // Relay mode (connection_relay.cpp): delivers the read buffer as the server's verdict on the
  // SYNC/PSYNC or its stream; after a refusal, what follows the error line is framed as usual.
  enum class RelayStep : std::uint8_t { delivered, frame_rest, invalid };
  RelayStep deliver_relayed();
  void resume_relay_input();  // hold_relay_input's client may send again
  void start_flush();
  void write_batch(std::uint64_t generation);
  // Writes the queued commands to the socket now, as far as it takes them without waiting.
  void write_queued_now();
  void ensure_read_space();
  boost::asio::awaitable<bool> tls_handshake();
  void close_on_expiry(boost::asio::steady_timer& deadline);
  // The one place that picks the plain socket or the TLS stream.
  template <class Buffers, class Token>
  auto async_read(const Buffers& buffers, Token&& token) {
    if (tls_) return tls_->async_read_some(buffers, std::forward<Token>(token));
    return socket_.async_read_some(buffers, std::forward<Token>(token));
  }
  template <class Buffers, class Token>
  auto async_write_all(const Buffers& buffers, Token&& token) {
    if (tls_) return boost::asio::async_write(*tls_, buffers, std::forward<Token>(token));
    return boost::asio::async_write(socket_, buffers, std::forward<Token>(token));
  }
  void fail_all(ErrorKind kind, std::string_view error);
  void set_state(State next);
  void break_connection();

  boost::asio::any_io_executor executor_;
  TurnQueue* turns_;  // the io_context's, when the executor is one's (else flushes are posted)
  ConnectionOptions options_;
  metrics::ThreadStats* stats_;
  std::atomic<int>* ready_connections_;
  boost::asio::ip::tcp::socket socket_;
  // Set per connected socket when TLS is on; reads and writes go through it then.
  std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
  boost::asio::steady_timer backoff_timer_;
  AsyncEvent broken_;
  State state_ = State::connecting;
  bool reached_server_ = false;  // ever ready
  std::uint64_t generation_ = 0;
  bool closing_ = false;
  bool flushing_ = false;
  bool timed_out_ = false;
  bool sent_untracked_ = false;  // a command whose outcome only the unsolicited target will see
  RelayState relay_ = RelayState::off;         // SYNC/PSYNC sent: see Link::start_raw_relay
  bool relay_held_ = false;                    // the relay's client is behind: the read loop waits
  std::unique_ptr<AsyncEvent> relay_resumed_;  // made by the first hold
  std::function<void()> relay_input_written_;  // hold_relay_input's resume, while it holds
  std::uint64_t tick_ = 0;
  // The last tick that saw a forwarded CLIENT PAUSE in force (server_pause.hpp): what waits in
  // Redis for the pause's end gets its command_timeout from there.
  std::uint64_t paused_tick_ = 0;
  FifoQueue<InFlight> in_flight_;
  std::shared_ptr<ReplyTarget> unsolicited_;
  std::string write_buffer_;  // commands not yet handed to the socket
  std::string writing_;       // the batch being written
  std::vector<char> read_buffer_;
  std::size_t read_begin_ = 0;
  std::size_t read_end_ = 0;
  // Plain sockets read through ReadyRead (one recv per wake-up) into read_buffer_'s free room.
  struct ReadRoom final : ReadSpace {
    explicit ReadRoom(Connection& owner) : connection(owner) {}
    boost::asio::mutable_buffer read_space() override {
      auto& c = connection;
      return {c.read_buffer_.data() + c.read_end_, c.read_buffer_.size() - c.read_end_};
    }
    Connection& connection;
  };
  ReadRoom read_room_{*this};
  ReadyRead reader_{read_room_};
  bool unverified_drain_ = false;  // the last plain read was taken as draining the socket
  std::string refusal_;
};

}  // namespace corral::upstream
