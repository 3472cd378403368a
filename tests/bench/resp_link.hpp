// One client connection for the benchmark load generators: a request out, its one reply back,
// framed by Corral's own reply framer. Errors come back as codes, never as exceptions.
#pragma once

#include <utility>

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "resp/reply.hpp"
#include "resp/reply_framer.hpp"

namespace corral::bench {

// What the load generators need to know about a reply without decoding it.
enum class ReplyKind { value, null, error, failed };

class RespLink {
 public:
  explicit RespLink(const boost::asio::any_io_executor& executor) : socket_(executor) {}

  boost::asio::awaitable<boost::system::error_code> connect(
      const boost::asio::ip::tcp::endpoint& endpoint) {
    boost::system::error_code ec;
    co_await socket_.async_connect(endpoint,
                                   boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (!ec) socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
    co_return ec;
  }

  // Sends `request` (complete RESP) and waits for exactly one reply. `raw`, when given, receives
  // the reply's bytes. On failed, `ec` says why (a protocol error is invalid_argument).
  boost::asio::awaitable<ReplyKind> call(std::string_view request, boost::system::error_code& ec,
                                         std::string* raw = nullptr) {
    using boost::asio::redirect_error;
    using boost::asio::use_awaitable;
    co_await boost::asio::async_write(socket_, boost::asio::buffer(request),
                                      redirect_error(use_awaitable, ec));
    if (ec) co_return ReplyKind::failed;
    for (;;) {
      const auto framed = resp::frame_reply(in_);
      if (framed.status == resp::FrameStatus::complete) {
        const auto kind = classify(std::string_view(in_).substr(0, framed.size));
        if (raw != nullptr) raw->assign(in_, 0, framed.size);
        in_.erase(0, framed.size);
        co_return kind;
      }
      if (framed.status == resp::FrameStatus::invalid) {
        ec = boost::asio::error::invalid_argument;
        co_return ReplyKind::failed;
      }
      const auto n = co_await socket_.async_read_some(boost::asio::buffer(chunk_),
                                                      redirect_error(use_awaitable, ec));
      if (ec) co_return ReplyKind::failed;
      in_.append(chunk_.data(), n);
    }
  }

  // call() with the reply decoded (for the few non-hot-path commands).
  boost::asio::awaitable<std::optional<resp::Reply>> query(std::string_view request,
                                                           boost::system::error_code& ec) {
    std::string raw;
    const auto kind = co_await call(request, ec, &raw);
    if (kind == ReplyKind::failed) co_return std::nullopt;
    co_return resp::decode_reply(raw);
  }

  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  static ReplyKind classify(std::string_view reply) {
    if (reply.starts_with('-')) return ReplyKind::error;
    if (reply.starts_with("$-1") || reply.starts_with("*-1")) return ReplyKind::null;
    return ReplyKind::value;
  }

  boost::asio::ip::tcp::socket socket_;
  std::string in_;
  std::array<char, 2048> chunk_{};
};

}  // namespace corral::bench
