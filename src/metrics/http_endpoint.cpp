// A small Beast HTTP/1.1 server for /metrics, /healthz and /readyz: one coroutine per connection,
// keep-alive, a read timeout, a request size limit and a cap on concurrent connections (at the
// cap, the connection that has waited longest for a request makes room for the new one).
#include <utility>

#include "metrics/http_endpoint.hpp"

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "metrics/metrics.hpp"

namespace corral::metrics {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);
constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string describe(const config::Endpoint& endpoint) {
  bool v6 = endpoint.host.find(':') != std::string::npos;
  return (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(endpoint.port);
}

bool is_http_parse_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category() &&
         ec != http::error::end_of_stream;
}

http::status parse_error_status(const beast::error_code& ec) {
  if (ec == http::error::body_limit) return http::status::payload_too_large;
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return http::status::request_header_fields_too_large;
  }
  return http::status::bad_request;
}

Response text_response(http::status status, unsigned version, std::string body) {
  Response res{status, version};
  res.set(http::field::server, "corral/" CORRAL_VERSION);
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  return res;
}

// Shared by the HttpEndpoint and every pending coroutine, so none outlives what it touches.
// Touched only on the io_context's thread, except `port_` and the constant members.
class Server : public std::enable_shared_from_this<Server> {
 public:
  Server(asio::io_context& io, config::Endpoint listen, const Metrics& metrics,
         HttpEndpoint::NotReadyReason ready, HttpEndpoint::Limits limits)
      : io_(io),
        listen_(std::move(listen)),
        metrics_(metrics),
        ready_(std::move(ready)),
        limits_(limits),
        acceptor_(io) {}

  asio::io_context& io() { return io_; }
  unsigned short port() const { return port_.load(std::memory_order_acquire); }

  void start() {
    if (acceptor_.is_open() || stopped_) return;
    bind();
    asio::co_spawn(io_, accept_loop(), asio::detached);
  }

  void close() {
    if (stopped_) return;
    stopped_ = true;
    beast::error_code ec;
    acceptor_.close(ec);
    // Pending reads and writes complete with operation_aborted; each coroutine then sees
    // stopped_ and leaves, erasing itself from connections_.
    for (auto& [stream, slot] : connections_) stream->close();
  }

 private:
  void fail(const beast::error_code& ec, const char* step) {
    beast::error_code ignored;
    acceptor_.close(ignored);
    throw std::system_error(ec, "metrics endpoint " + describe(listen_) + ": " + step);
  }

  tcp::endpoint resolve() {
    beast::error_code ec;
    auto address = asio::ip::make_address(listen_.host, ec);
    if (!ec) return {address, listen_.port};
    tcp::resolver resolver(io_);
    auto results = resolver.resolve(listen_.host, std::to_string(listen_.port), ec);
    if (!ec && results.empty()) ec = asio::error::host_not_found;
    if (ec) fail(ec, "cannot resolve host");
    return results.begin()->endpoint();
  }

  void bind() {
    tcp::endpoint endpoint = resolve();
    beast::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (ec) fail(ec, "cannot open socket");
    acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (ec) fail(ec, "cannot set SO_REUSEADDR");
    acceptor_.bind(endpoint, ec);
    if (ec) fail(ec, "cannot bind");
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) fail(ec, "cannot listen");
    port_.store(acceptor_.local_endpoint(ec).port(), std::memory_order_release);
  }

  asio::awaitable<void> accept_loop() {
    auto self = shared_from_this();
    asio::steady_timer backoff(io_);
    for (;;) {
      beast::error_code ec;
      tcp::socket socket =
          co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (stopped_) co_return;
      if (ec) {
        // Typically EMFILE: pause instead of spinning on an error that repeats at once.
        backoff.expires_after(kAcceptRetryDelay);
        co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      if (active_ >= limits_.max_connections && !evict_longest_waiting()) {
        socket.close(ec);  // every slot is answering: a scrape storm must not exhaust descriptors
        continue;
      }
      ++active_;
      asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> serve(tcp::socket socket) {
    auto self = shared_from_this();
    beast::tcp_stream stream(std::move(socket));
    Slot& slot = connections_[&stream];
    struct Release {
      Server& server;
      beast::tcp_stream* stream;
      ~Release() {
        if (server.connections_.erase(stream) != 0) --server.active_;  // else evicted, counted
      }
    } release{*this, &stream};
    if (stopped_) co_return;

    beast::flat_buffer buffer(limits_.max_request);
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(limits_.max_request));
      parser.body_limit(limits_.max_request);
      beast::error_code ec;
      slot = {Clock::now(), false};
      stream.expires_after(limits_.read_timeout);
      co_await http::async_read(stream, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (stopped_ || !connections_.contains(&stream)) co_return;  // `slot` is gone if evicted
      slot.answering = true;
      if (ec && !is_http_parse_error(ec)) break;  // closed, reset or timed out
      Response res;
      if (ec) {
        res = text_response(parse_error_status(ec), 11, "bad request\n");
        res.keep_alive(false);  // the parser's position in the stream is lost
      } else {
        res = respond(parser.get());
      }
      res.prepare_payload();
      // HEAD keeps the Content-Length of the GET it mirrors, without the body.
      if (!ec && parser.get().method() == http::verb::head) res.body().clear();
      stream.expires_after(limits_.read_timeout);
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || stopped_ || !res.keep_alive()) break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  // Closes the connection that has waited longest for its next request (idle keep-alive, or a
  // request that is arriving slowly), so that idle or slow clients cannot lock the probes out.
  // One that is being answered is never cut. False when every connection is being answered.
  bool evict_longest_waiting() {
    auto victim = connections_.end();
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
      if (it->second.answering) continue;
      if (victim == connections_.end() || it->second.waiting_since < victim->second.waiting_since)
        victim = it;
    }
    if (victim == connections_.end()) return false;
    victim->first->close();
    connections_.erase(victim);
    --active_;
    return true;
  }

  Response respond(const Request& req) {
    std::string_view target(req.target().data(), req.target().size());
    std::string_view path = target.substr(0, target.find('?'));
    Response res;
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      res = text_response(http::status::method_not_allowed, req.version(), "method not allowed\n");
      res.set(http::field::allow, "GET, HEAD");
    } else if (path == "/metrics") {
      res = text_response(http::status::ok, req.version(), metrics_.serialize());
      res.set(http::field::content_type, kMetricsContentType);
    } else if (path == "/healthz") {
      res = text_response(http::status::ok, req.version(), "ok");
    } else if (path == "/readyz") {
      const std::string reason = ready_ ? ready_() : std::string();
      res = reason.empty()
                ? text_response(http::status::ok, req.version(), "ready")
                : text_response(http::status::service_unavailable, req.version(), reason);
    } else {
      res = text_response(http::status::not_found, req.version(), "not found\n");
    }
    res.set(http::field::cache_control, "no-store");
    res.keep_alive(req.keep_alive());
    return res;
  }

  asio::io_context& io_;
  const config::Endpoint listen_;
  const Metrics& metrics_;
  const HttpEndpoint::NotReadyReason ready_;
  const HttpEndpoint::Limits limits_;
  tcp::acceptor acceptor_;
  std::atomic<unsigned short> port_{0};
  bool stopped_ = false;
  using Clock = std::chrono::steady_clock;
  struct Slot {
    Clock::time_point waiting_since;  // when the connection began waiting for its next request
    bool answering = false;
  };

  std::size_t active_ = 0;  // counted from accept, so the cap holds before a coroutine starts
  std::unordered_map<beast::tcp_stream*, Slot> connections_;
};

}  // namespace

struct HttpEndpoint::Impl {
  std::shared_ptr<Server> server;
};

HttpEndpoint::HttpEndpoint(boost::asio::io_context& io, const config::Endpoint& listen,
                           const Metrics& metrics, HttpEndpoint::NotReadyReason ready)
    : HttpEndpoint(io, listen, metrics, std::move(ready), Limits{}) {}

HttpEndpoint::HttpEndpoint(boost::asio::io_context& io, const config::Endpoint& listen,
                           const Metrics& metrics, HttpEndpoint::NotReadyReason ready,
                           Limits limits)
    : impl_(std::make_unique<Impl>(
          Impl{std::make_shared<Server>(io, listen, metrics, std::move(ready), limits)})) {}

HttpEndpoint::~HttpEndpoint() { stop(); }

void HttpEndpoint::start() { impl_->server->start(); }

void HttpEndpoint::stop() {
  std::shared_ptr<Server> server = impl_->server;
  // A stopped io_context runs nothing, so nothing races a close done here.
  if (server->io().stopped()) {
    server->close();
    return;
  }
  boost::asio::dispatch(server->io(), [server] { server->close(); });
}

unsigned short HttpEndpoint::port() const { return impl_->server->port(); }

}  // namespace corral::metrics
