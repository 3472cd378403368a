// A read on a plain TCP socket that costs one recv per wake-up: it waits on the reactor's
// edge-triggered registration and reads once, and a short read marks the socket drained.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/detail/reactor_fwd.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace corral::upstream {

// Where a ReadyRead puts the bytes: asked only once bytes are there, so an idle connection
// needs no buffer while it waits.
class ReadSpace {
 public:
  virtual boost::asio::mutable_buffer read_space() = 0;
  // The readiness was stale (the read would block): the space may be given back.
  virtual void nothing_read() {}

 protected:
  ~ReadSpace() = default;
};

// Why not async_read_some: Asio (1.74, epoll) tries every read at once unless the last attempt
// came back with nothing (end of stream), so after each message it reads again and gets EAGAIN,
// a wasted syscall per message; and a readiness wait (async_wait) re-arms epoll with an
// epoll_ctl every time. This operation tells the reactor a read that filled less than its room
// drained the socket, which is what the reactor's "exhausted" status means: the next read then
// waits for the next edge without trying first. The reactor runs the read on the socket's own
// thread, in the same step as it sees the edge, so a message arriving after that read raises a
// new edge and is never missed.
//
// One operation at a time per object (the owner's read loop): the object is reused, so a read
// allocates nothing. It must outlive the read it started; the handler it holds is what keeps
// the owner alive, as with Asio's own operations.
class ReadyRead final : public boost::asio::detail::reactor_op {
 public:
  explicit ReadyRead(ReadSpace& space);
  ~ReadyRead();
  ReadyRead(const ReadyRead&) = delete;
  ReadyRead& operator=(const ReadyRead&) = delete;

  // Completes with (error_code, bytes) once bytes were read into the space (or the stream
  // ended: error::eof). The socket is put in non-blocking mode.
  template <class Token>
  auto async_read(boost::asio::ip::tcp::socket& socket, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this, &socket](auto handler) { start(socket, std::move(handler)); }, token);
  }

  // The last read took less than its room, so the socket was taken as drained. That guess misses
  // one thing: a hang-up that arrived together with the bytes raises no further edge, so an owner
  // that may wait long checks with peer_hung_up() now and then.
  bool last_read_drained() const { return drained_guess_; }

 private:
  // The completion handler, stored in place (a coroutine's is its executor and a pointer).
  static constexpr std::size_t kHandlerRoom = 80;

  template <class Handler>
  void start(boost::asio::ip::tcp::socket& socket, Handler handler) {
    static_assert(sizeof(Handler) <= kHandlerRoom && alignof(Handler) <= alignof(std::max_align_t),
                  "ReadyRead's handler room is too small for this completion handler");
    new (handler_) Handler(std::move(handler));
    invoke_ = [](unsigned char* storage, boost::system::error_code ec, std::size_t n) {
      auto* stored = std::launder(reinterpret_cast<Handler*>(storage));
      Handler local(std::move(*stored));
      stored->~Handler();
      std::move(local)(ec, n);
    };
    destroy_ = [](unsigned char* storage) {
      auto* stored = std::launder(reinterpret_cast<Handler*>(storage));
      Handler local(std::move(*stored));
      stored->~Handler();
    };
    start_op(socket);
  }
  void start_op(boost::asio::ip::tcp::socket& socket);

  static status do_perform(boost::asio::detail::reactor_op* base);
  static void do_complete(void* owner, boost::asio::detail::operation* base,
                          const boost::system::error_code& ec, std::size_t bytes);

  ReadSpace& space_;
  boost::asio::detail::reactor* reactor_ = nullptr;
  int fd_ = -1;
  bool pending_ = false;
  bool drained_guess_ = false;
  alignas(std::max_align_t) unsigned char handler_[kHandlerRoom];
  void (*invoke_)(unsigned char*, boost::system::error_code, std::size_t) = nullptr;
  void (*destroy_)(unsigned char*) = nullptr;
};

// True when the peer closed its side (or reset the connection) and every byte before that was
// read: one recv(MSG_PEEK), for the rare check that backs up ReadyRead's guess.
bool peer_hung_up(boost::asio::ip::tcp::socket& socket);

}  // namespace corral::upstream
