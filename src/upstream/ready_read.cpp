// ReadyRead: the reactor operation (Asio 1.74's epoll reactor internals, used as its own socket
// operations use them) and the hang-up probe that backs up its "drained" guess.
#include "upstream/ready_read.hpp"

#include <sys/socket.h>

#include <cerrno>

#include <boost/asio/detail/scheduler.hpp>
// After the scheduler: the reactor's inline members use it.
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

namespace corral::upstream {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// The socket's reactor registration is protected inside basic_socket; a member pointer formed
// through a derived class is the standard way to name it from outside.
struct SocketInternals : asio::ip::tcp::socket {
  static auto& implementation(asio::ip::tcp::socket& socket) {
    return (socket.*&SocketInternals::impl_).get_implementation();
  }
};
}  // namespace

ReadyRead::ReadyRead(ReadSpace& space)
    : reactor_op(error_code(), &ReadyRead::do_perform, &ReadyRead::do_complete), space_(space) {}

ReadyRead::~ReadyRead() {
  // Only reachable with a read pending when the io_context died first and never destroyed it.
  if (pending_ && destroy_ != nullptr) destroy_(handler_);
}

void ReadyRead::start_op(asio::ip::tcp::socket& socket) {
  auto& impl = SocketInternals::implementation(socket);
  ec_ = error_code();
  bytes_transferred_ = 0;
  fd_ = impl.socket_;
  pending_ = true;
  drained_guess_ = false;
  if (reactor_ == nullptr) {
    reactor_ = &asio::use_service<asio::detail::reactor>(
        asio::query(socket.get_executor(), asio::execution::context));
  }
  if ((impl.state_ & asio::detail::socket_ops::internal_non_blocking) == 0 &&
      impl.socket_ != asio::detail::invalid_socket &&
      !asio::detail::socket_ops::set_internal_non_blocking(impl.socket_, impl.state_, true, ec_)) {
    reactor_->post_immediate_completion(this, false);
    return;
  }
  // A closed socket (no registration) completes at once with bad_descriptor, from the reactor.
  reactor_->start_op(asio::detail::reactor::read_op, impl.socket_, impl.reactor_data_, this, false,
                     true);
}

ReadyRead::status ReadyRead::do_perform(asio::detail::reactor_op* base) {
  auto* self = static_cast<ReadyRead*>(base);
  const auto room = self->space_.read_space();
  for (;;) {
    const auto n = ::recv(self->fd_, room.data(), room.size(), 0);
    if (n > 0) {
      self->bytes_transferred_ = static_cast<std::size_t>(n);
      if (self->bytes_transferred_ < room.size()) {
        // Less than the room: the socket had no more. "Exhausted" makes the reactor wait for
        // the next edge instead of trying the next read at once.
        self->drained_guess_ = true;
        return done_and_exhausted;
      }
      return done;
    }
    if (n == 0) {
      self->ec_ = asio::error::eof;
      return done_and_exhausted;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      self->space_.nothing_read();
      return not_done;
    }
    self->ec_ = error_code(errno, asio::error::get_system_category());
    return done;
  }
}

void ReadyRead::do_complete(void* owner, asio::detail::operation* base, const error_code&,
                            std::size_t) {
  auto* self = static_cast<ReadyRead*>(base);
  self->pending_ = false;
  // The handler may own the object this operation lives in (and start the next read on it):
  // nothing touches `self` after it.
  if (owner != nullptr) {
    self->invoke_(self->handler_, error_code(self->ec_), std::size_t{self->bytes_transferred_});
  } else {
    self->destroy_(self->handler_);
  }
}

bool peer_hung_up(asio::ip::tcp::socket& socket) {
  if (!socket.is_open()) return false;
  char byte = 0;
  const auto n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  // 0: the peer's FIN; an error other than "nothing yet": a reset (ECONNRESET) or a dead link.
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace corral::upstream
