// The `http` origin: a pool of keep-alive HTTP/1.1 connections (callback-based Beast), a bounded
// queue when all are busy, a deadline per fetch, and retries only where a GET surely did not run.
#include <utility>

#include "origin/http_origin.hpp"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/range/iterator_range.hpp>
#include <cassert>
#include <deque>
#include <optional>
#include <vector>

#include "config/url_template.hpp"
#include "config/values.hpp"
#include "origin/http_reply.hpp"
#include "origin/response_caching.hpp"
#include "resp/encoder.hpp"

namespace corral::origin::http_detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using config::UrlTemplate;

// Fetches that may wait for a connection, per allowed connection: past it a fetch fails at once
// rather than piling up behind an origin that is already too slow.
constexpr std::size_t kQueuedPerConnection = 64;
constexpr std::uint32_t kHeaderLimit = 64 * 1024;
constexpr std::string_view kShutDown = "ERR corral: origin shut down";

class Connection;

// One fetch, from fetch() to its callback, across the queue, retries and connections.
struct Exchange {
  Exchange(const asio::any_io_executor& executor, const StringRequest& r, std::string t,
           FetchCallback d, cache::TimePoint s)
      : request(r), target(std::move(t)), done(std::move(d)), started(s), deadline(executor) {}

  StringRequest request;  // its key view is cleared: argv dies with fetch()
  std::string target;
  Validators validators;  // of the stored copy: sent as If-None-Match / If-Modified-Since
  FetchCallback done;
  cache::TimePoint started;
  asio::steady_timer deadline;  // the whole fetch: `timeout`
  int retries_left = 0;
  bool finished = false;
  std::weak_ptr<Connection> connection;  // set while a connection works on it
};

class Pool : public std::enable_shared_from_this<Pool> {
 public:
  Pool(const asio::any_io_executor& executor, std::string prefix,
       const config::HttpOriginSettings& settings, const cache::Clock& clock);

  void fetch(std::span<const std::string_view> argv, std::string_view validators,
             FetchCallback done);
  void shutdown();

  // For the connections.
  const asio::any_io_executor& executor() const { return executor_; }
  const config::HttpOriginSettings& settings() const { return settings_; }
  const UrlTemplate& url_template() const { return url_; }
  const std::vector<tcp::endpoint>& numeric_endpoints() const { return endpoints_; }
  std::string url(const Exchange& exchange) const {
    return config::redact_query("http://" + url_.authority() + exchange.target);
  }
  bool closed() const { return closed_; }
  // Starts `exchange` on an idle connection, a new one, or queues it (`front`: a retry).
  void dispatch(const std::shared_ptr<Exchange>& exchange, bool front);
  // A connection finished its exchange and can take another.
  void release(const std::shared_ptr<Connection>& connection);
  // An idle connection noticed the server closed it.
  void forget_idle(const Connection* connection);
  // A connection closed: its slot may serve the queue.
  void dropped(const Connection* connection);
  // Delivers the result (posted: never inside fetch(), never inside our own bookkeeping).
  void finish(Exchange& exchange, Outcome outcome, std::string reply,
              std::optional<ResponseCaching> caching = std::nullopt);
  // What the response's headers say about keeping it (its freshness, validators, tags).
  ResponseCaching caching_of(const http::response<http::string_body>& response) const;

 private:
  void on_deadline(const std::shared_ptr<Exchange>& exchange);
  std::shared_ptr<Exchange> pop_queued();

  asio::any_io_executor executor_;
  std::string prefix_;
  config::HttpOriginSettings settings_;
  const cache::Clock& clock_;
  UrlTemplate url_;
  std::vector<tcp::endpoint> endpoints_;  // the host is an IP literal: no resolver needed
  std::size_t max_queued_;
  std::size_t open_ = 0;                                // connections connecting, busy or idle
  std::vector<std::shared_ptr<Connection>> idle_;       // most recently used last
  std::vector<std::weak_ptr<Connection>> connections_;  // every open one, for shutdown
  std::deque<std::shared_ptr<Exchange>> queue_;
  bool closed_ = false;
};

// One TCP connection to the origin. Owned by its pending handlers while busy and by the pool
// while idle; it keeps the pool alive, and the pool's shutdown breaks the cycle.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  explicit Connection(std::shared_ptr<Pool> pool)
      : pool_(std::move(pool)),
        resolver_(pool_->executor()),
        socket_(pool_->executor()),
        connect_timer_(pool_->executor()) {}

  void open(std::shared_ptr<Exchange> exchange);  // connects, then runs `exchange`
  void run(std::shared_ptr<Exchange> exchange);   // on this idle, connected connection
  void watch_idle();
  void close();

 private:
  void attach(std::shared_ptr<Exchange> exchange, bool reused);
  void on_connected(const error_code& ec);
  void send();
  void on_written(const error_code& ec);
  void on_header(const error_code& ec);
  void on_read(const error_code& ec);
  void complete();
  void complete_not_modified(std::shared_ptr<Exchange> exchange, ResponseCaching caching);
  void fail(bool retriable, std::string text);
  void end();
  std::string read_error_text(const error_code& ec, bool no_byte) const;

  std::shared_ptr<Pool> pool_;
  tcp::resolver resolver_;
  tcp::socket socket_;
  asio::steady_timer connect_timer_;
  beast::flat_buffer buffer_;
  http::request<http::empty_body> request_;
  std::optional<http::response_parser<http::string_body>> parser_;
  std::shared_ptr<Exchange> exchange_;
  std::uint64_t idle_generation_ = 0;  // stale idle watches compare against it
  bool idle_ = false;
  bool reused_ = false;
  bool connecting_ = false;
  bool connect_timed_out_ = false;
  bool closed_ = false;
  bool ended_ = false;
};

// ---------------------------------------------------------------------------------------------
// Connection
// ---------------------------------------------------------------------------------------------

void Connection::attach(std::shared_ptr<Exchange> exchange, bool reused) {
  exchange_ = std::move(exchange);
  exchange_->connection = weak_from_this();
  reused_ = reused;
}

void Connection::open(std::shared_ptr<Exchange> exchange) {
  attach(std::move(exchange), false);
  const auto& settings = pool_->settings();
  connecting_ = true;
  connect_timer_.expires_after(settings.connect_timeout);
  connect_timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    // Checked by flag, not by `ec`: the timer may fire just as the connect succeeds.
    if (ec || !self->connecting_) return;
    self->connect_timed_out_ = true;
    self->close();
  });
  auto connected = [self = shared_from_this()](const error_code& ec, const tcp::endpoint&) {
    self->on_connected(ec);
  };
  if (!pool_->numeric_endpoints().empty()) {
    asio::async_connect(socket_, pool_->numeric_endpoints(), std::move(connected));
    return;
  }
  const UrlTemplate& url = pool_->url_template();
  resolver_.async_resolve(
      url.host(), std::to_string(url.port()),
      [self = shared_from_this(), connected = std::move(connected)](
          const error_code& ec, const tcp::resolver::results_type& results) mutable {
        if (ec || self->closed_)
          return self->on_connected(ec ? ec : asio::error::operation_aborted);
        asio::async_connect(self->socket_, results, std::move(connected));
      });
}

void Connection::on_connected(const error_code& ec) {
  connecting_ = false;
  connect_timer_.cancel();
  const UrlTemplate& url = pool_->url_template();
  const std::string where = url.authority();
  if (connect_timed_out_)
    return fail(false, "ERR corral: origin " + where + " connect timed out after " +
                           config::format_duration(pool_->settings().connect_timeout));
  if (ec) return fail(true, "ERR corral: origin " + where + " connect failed: " + ec.message());
  error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  send();
}

void Connection::run(std::shared_ptr<Exchange> exchange) {
  // Ends the idle watch; its handler sees the generation moved on and does nothing.
  ++idle_generation_;
  idle_ = false;
  error_code ignored;
  socket_.cancel(ignored);
  attach(std::move(exchange), true);
  send();
}

void Connection::send() {
  if (exchange_->finished) return end();
  const auto& settings = pool_->settings();
  request_ = {};
  request_.method(http::verb::get);
  request_.target(exchange_->target);
  request_.version(11);
  request_.set(http::field::host, pool_->url_template().authority());
  request_.set(http::field::user_agent, "corral");
  for (const auto& [name, value] : settings.headers) request_.set(name, value);
  const auto& validators = exchange_->validators;
  if (!validators.etag.empty()) request_.set(http::field::if_none_match, validators.etag);
  if (!validators.last_modified.empty())
    request_.set(http::field::if_modified_since, validators.last_modified);
  parser_.emplace();
  parser_->body_limit(settings.max_body);
  parser_->header_limit(kHeaderLimit);
  http::async_write(
      socket_, request_,
      [self = shared_from_this()](const error_code& ec, std::size_t) { self->on_written(ec); });
}

void Connection::on_written(const error_code& ec) {
  if (exchange_->finished) return end();
  // Nothing was answered: a GET that failed to go out on a reused connection is safe to resend.
  if (ec)
    return fail(reused_, "ERR corral: origin " + pool_->url(*exchange_) +
                             " connection lost: " + ec.message());
  // The header first: Beast 1.74's eager parse of a whole message skips the Content-Length
  // check against body_limit, so the limit is checked here before any body is read.
  http::async_read_header(socket_, buffer_, *parser_,
                          [self = shared_from_this()](const error_code& read_ec, std::size_t) {
                            self->on_header(read_ec);
                          });
}

void Connection::on_header(const error_code& ec) {
  if (exchange_->finished || ec) return on_read(ec);
  const auto length = parser_->content_length();
  if (length && *length > pool_->settings().max_body) return on_read(http::error::body_limit);
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](const error_code& read_ec, std::size_t) {
                     self->on_read(read_ec);
                   });
}

std::string Connection::read_error_text(const error_code& ec, bool no_byte) const {
  if (ec == http::error::body_limit)
    return "ERR corral: origin body over max_body (" +
           config::format_size(pool_->settings().max_body) + ")";
  std::string text = "ERR corral: origin " + pool_->url(*exchange_);
  if (ec == http::error::end_of_stream || (no_byte && ec == asio::error::eof))
    return text + " closed the connection before answering";
  if (ec == http::error::partial_message) return text + " closed the connection mid-response";
  if (ec == asio::error::connection_reset) return text + " reset the connection";
  if (ec.category() == error_code(http::error::bad_version).category())
    return text + " sent a malformed response (" + ec.message() + ")";
  return text + " connection lost: " + ec.message();
}

void Connection::on_read(const error_code& ec) {
  if (exchange_->finished) return end();
  if (ec) {
    // A keep-alive connection the server closed just as we reused it: the request surely was
    // not processed, so another connection may try it.
    const bool no_byte = !parser_->got_some() && buffer_.size() == 0;
    return fail(reused_ && no_byte && ec != http::error::body_limit, read_error_text(ec, no_byte));
  }
  complete();
}

void Connection::complete() {
  auto& response = parser_->get();
  const unsigned status = response.result_int();
  std::string body = std::move(response.body());
  // Read before the connection is released: the next fetch on it reuses the parser.
  auto caching = pool_->caching_of(response);
  // Left-over bytes would be an unasked-for response: such a connection is not reused.
  const bool keep = response.keep_alive() && buffer_.size() == 0 && status >= 200;
  auto exchange = std::move(exchange_);
  exchange->connection.reset();
  // Bookkeeping first (the pool may hand this connection the next fetch at once), the callback
  // last: it is posted anyway, but nothing below may depend on this connection's state.
  if (keep) {
    pool_->release(shared_from_this());
  } else {
    end();
  }
  if (status == 200)
    return pool_->finish(*exchange, Outcome::value, found_reply(exchange->request, body),
                         std::move(caching));
  if (status == 404)
    return pool_->finish(*exchange, Outcome::nil, std::string(not_found_reply(exchange->request)),
                         std::move(caching));
  if (status == 304 && !exchange->validators.empty())
    return complete_not_modified(std::move(exchange), std::move(caching));
  pool_->finish(
      *exchange, Outcome::failure,
      "ERR corral: origin " + pool_->url(*exchange) + " answered HTTP " + std::to_string(status));
}

void Connection::complete_not_modified(std::shared_ptr<Exchange> exchange,
                                       ResponseCaching caching) {
  caching.not_modified = true;
  // A 304 need not repeat the validators (RFC 9110 section 15.4.5): the ones we sent stand.
  if (caching.validators.empty())
    caching.validators =
        encode_validators(exchange->validators.etag, exchange->validators.last_modified);
  pool_->finish(*exchange, Outcome::value, std::string(), std::move(caching));
}

void Connection::fail(bool retriable, std::string text) {
  auto exchange = std::move(exchange_);
  exchange->connection.reset();
  if (!exchange->finished) {
    if (pool_->closed()) {
      pool_->finish(*exchange, Outcome::failure, std::string(kShutDown));
    } else if (retriable && exchange->retries_left > 0) {
      // Queued at the front before this slot frees, so the retry is what the slot serves next.
      --exchange->retries_left;
      pool_->dispatch(exchange, true);
    } else {
      pool_->finish(*exchange, Outcome::failure, std::move(text));
    }
  }
  end();
}

void Connection::watch_idle() {
  idle_ = true;
  socket_.async_wait(tcp::socket::wait_read,
                     [self = shared_from_this(), generation = idle_generation_](const error_code&) {
                       if (!self->idle_ || self->idle_generation_ != generation) return;
                       // Readable while idle: the server closed it (or sent junk). Either way
                       // it must not carry the next request.
                       self->idle_ = false;
                       self->pool_->forget_idle(self.get());
                       self->end();
                     });
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  resolver_.cancel();
  connect_timer_.cancel();
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void Connection::end() {
  if (ended_) return;
  ended_ = true;
  close();
  pool_->dropped(this);
}

// ---------------------------------------------------------------------------------------------
// Pool
// ---------------------------------------------------------------------------------------------

Pool::Pool(const asio::any_io_executor& executor, std::string prefix,
           const config::HttpOriginSettings& settings, const cache::Clock& clock)
    : executor_(executor),
      prefix_(std::move(prefix)),
      settings_(settings),
      clock_(clock),
      url_(UrlTemplate::parse(settings.url_template)),
      max_queued_(kQueuedPerConnection *
                  static_cast<std::size_t>(std::max(1, settings.max_connections))) {
  error_code ec;
  const auto address = asio::ip::make_address(url_.host(), ec);
  if (url_.ok() && !ec) endpoints_.emplace_back(address, url_.port());
}

void Pool::fetch(std::span<const std::string_view> argv, std::string_view validators,
                 FetchCallback done) {
  const cache::TimePoint started = clock_.now();
  std::string error;
  auto request = parse_string_request(argv, error);
  std::optional<std::string> target;
  if (request) {
    target = url_.target(request->key, prefix_);
    if (!target && url_.ok()) {
      request.reset();
      resp::append_error(error,
                         "ERR corral: this key would make an empty, '.' or '..' segment in the "
                         "origin's URL path; refused");
    }
  }
  std::shared_ptr<Exchange> exchange;
  if (request) {
    exchange = std::make_shared<Exchange>(executor_, *request, std::move(*target), std::move(done),
                                          started);
    exchange->request.key = {};
    exchange->validators = decode_validators(validators);
  } else {
    exchange = std::make_shared<Exchange>(executor_, StringRequest{}, std::string(),
                                          std::move(done), started);
  }
  if (!request) return finish(*exchange, Outcome::error_reply, std::move(error));
  if (!url_.ok())
    return finish(*exchange, Outcome::failure,
                  "ERR corral: origin URL template " +
                      config::redact_template(settings_.url_template) + ": " + url_.error());
  if (closed_) return finish(*exchange, Outcome::failure, std::string(kShutDown));
  exchange->retries_left = std::max(0, settings_.retries);
  exchange->deadline.expires_after(settings_.timeout);
  exchange->deadline.async_wait([weak = weak_from_this(), exchange](const error_code& ec) {
    if (ec) return;
    if (auto pool = weak.lock()) pool->on_deadline(exchange);
  });
  dispatch(exchange, false);
}

void Pool::dispatch(const std::shared_ptr<Exchange>& exchange, bool front) {
  if (closed_) return finish(*exchange, Outcome::failure, std::string(kShutDown));
  if (!idle_.empty()) {
    auto connection = std::move(idle_.back());
    idle_.pop_back();
    return connection->run(exchange);
  }
  if (open_ < static_cast<std::size_t>(settings_.max_connections)) {
    ++open_;
    auto connection = std::make_shared<Connection>(shared_from_this());
    std::erase_if(connections_, [](const auto& weak) { return weak.expired(); });
    connections_.push_back(connection);
    return connection->open(exchange);
  }
  if (queue_.size() >= max_queued_)
    return finish(*exchange, Outcome::failure,
                  "ERR corral: origin queue full (" + std::to_string(queue_.size()) +
                      " fetches wait for " + std::to_string(settings_.max_connections) +
                      " connections)");
  if (front) {
    queue_.push_front(exchange);
  } else {
    queue_.push_back(exchange);
  }
}

std::shared_ptr<Exchange> Pool::pop_queued() {
  while (!queue_.empty()) {
    auto exchange = std::move(queue_.front());
    queue_.pop_front();
    if (!exchange->finished) return exchange;
  }
  return nullptr;
}

void Pool::release(const std::shared_ptr<Connection>& connection) {
  if (closed_) return connection->close();
  if (auto next = pop_queued()) return connection->run(std::move(next));
  idle_.push_back(connection);
  connection->watch_idle();
}

void Pool::forget_idle(const Connection* connection) {
  std::erase_if(idle_, [connection](const auto& c) { return c.get() == connection; });
}

void Pool::dropped(const Connection* connection) {
  assert(open_ > 0);
  --open_;
  std::erase_if(connections_, [connection](const auto& weak) {
    const auto c = weak.lock();
    return !c || c.get() == connection;
  });
  if (closed_) return;
  if (auto next = pop_queued()) dispatch(next, true);
}

void Pool::on_deadline(const std::shared_ptr<Exchange>& exchange) {
  if (exchange->finished) return;
  if (auto connection = exchange->connection.lock()) {
    // Its pending operation completes with an error, sees the fetch finished, and drops itself.
    connection->close();
  } else {
    std::erase(queue_, exchange);
  }
  finish(*exchange, Outcome::failure,
         "ERR corral: origin timed out after " + config::format_duration(settings_.timeout));
}

ResponseCaching Pool::caching_of(const http::response<http::string_body>& response) const {
  // Several field lines of one list field are one list (RFC 9110 section 5.3).
  std::string cache_control;
  const auto [first, last] = response.equal_range(http::field::cache_control);
  for (const auto& field : boost::make_iterator_range(first, last)) {
    if (!cache_control.empty()) cache_control += ", ";
    cache_control.append(field.value().data(), field.value().size());
  }
  const auto view = [&response](auto name) {
    const auto value = response[name];
    return std::string_view(value.data(), value.size());
  };
  ResponseHeaders headers;
  headers.cache_control = cache_control;
  headers.expires = view(http::field::expires);
  headers.date = view(http::field::date);
  headers.age = view(http::field::age);
  headers.etag = view(http::field::etag);
  headers.last_modified = view(http::field::last_modified);
  headers.surrogate_key = view("Surrogate-Key");
  headers.cache_tag = view("Cache-Tag");
  const auto freshness = settings_.cache_control == config::CacheControlMode::honor
                             ? FreshnessHeaders::honor
                             : FreshnessHeaders::ignore;
  const auto wall_now =
      std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  return evaluate_response(headers, freshness, wall_now, settings_.max_ttl);
}

void Pool::finish(Exchange& exchange, Outcome outcome, std::string reply,
                  std::optional<ResponseCaching> caching) {
  if (exchange.finished) return;
  exchange.finished = true;
  exchange.deadline.cancel();
  const auto duration = clock_.now() - exchange.started;
  asio::post(executor_, [done = std::move(exchange.done), outcome, reply = std::move(reply),
                         duration, caching = std::move(caching)]() mutable {
    if (!done) return;
    FetchResult result;
    result.outcome = outcome;
    result.reply = reply;
    result.duration = duration;
    result.caching = std::move(caching);
    done(result);
  });
}

void Pool::shutdown() {
  closed_ = true;
  while (auto exchange = pop_queued()) finish(*exchange, Outcome::failure, std::string(kShutDown));
  // Busy connections fail their fetch from their aborted handler; idle ones just end.
  for (const auto& weak : std::vector(connections_)) {
    if (auto connection = weak.lock()) connection->close();
  }
  idle_.clear();
}

}  // namespace corral::origin::http_detail

namespace corral::origin {

HttpOrigin::HttpOrigin(const boost::asio::any_io_executor& executor, std::string prefix,
                       const config::HttpOriginSettings& settings, const cache::Clock& clock)
    : pool_(std::make_shared<http_detail::Pool>(executor, std::move(prefix), settings, clock)) {}

HttpOrigin::~HttpOrigin() { pool_->shutdown(); }

void HttpOrigin::fetch(std::span<const std::string_view> argv, FetchCallback done) {
  pool_->fetch(argv, {}, std::move(done));
}

void HttpOrigin::revalidate(std::span<const std::string_view> argv, FetchReason /*reason*/,
                            std::string_view validators, FetchCallback done) {
  pool_->fetch(argv, validators, std::move(done));
}

}  // namespace corral::origin
