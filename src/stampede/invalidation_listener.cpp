// The tracking connection: handshake (AUTH, CLIENT ID, CLIENT TRACKING ... BCAST PREFIX ...,
// SUBSCRIBE __redis__:invalidate), then invalidation messages; tracked prefixes are flushed
// whenever tracking is (re)established, since writes made while nobody tracked went unseen.
#include "stampede/invalidation_listener.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "resp/reply_framer.hpp"
#include "stampede/cache_runtime.hpp"

namespace corral::stampede {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;

namespace {
constexpr std::string_view kChannel = "__redis__:invalidate";
constexpr std::string_view kConnectionName = "corral-tracking";

std::vector<std::string> tracked_prefixes(const PolicySet& policies) {
  std::vector<std::string> prefixes;
  for (const auto& policy : policies.settings) {
    // Fleet mode keeps http values in Redis too: a refresh by another process lands there.
    if (policy.origin == config::OriginKind::redis || policy.shared) {
      prefixes.push_back(policy.prefix);
    }
  }
  return prefixes;
}
}  // namespace

InvalidationListener::InvalidationListener(const asio::any_io_executor& executor,
                                           const config::UpstreamSettings& upstream,
                                           CacheRuntime& runtime,
                                           std::function<void(std::string_view)> invalidated)
    : executor_(executor),
      upstream_(upstream),
      runtime_(runtime),
      invalidated_(std::move(invalidated)),
      socket_(executor),
      backoff_timer_(executor) {}

InvalidationListener::~InvalidationListener() = default;

void InvalidationListener::start() {
  asio::co_spawn(
      executor_, [self = shared_from_this()] { return self->run(); }, asio::detached);
}

void InvalidationListener::stop() {
  stopping_ = true;
  backoff_timer_.cancel();
  error_code ignored;
  socket_.close(ignored);
}

void InvalidationListener::restart() {
  // Dropping the connection makes run() start over with the current prefixes.
  error_code ignored;
  socket_.close(ignored);
  backoff_timer_.cancel();
}

awaitable<void> InvalidationListener::run() {
  auto backoff = upstream_.reconnect_backoff_min;
  while (!stopping_) {
    const auto prefixes = tracked_prefixes(*runtime_.policies());
    if (prefixes.empty()) {
      // Nothing to track: wait for a reload to restart us.
      backoff_timer_.expires_at(asio::steady_timer::time_point::max());
    } else {
      co_await serve(prefixes);
      // The tracked prefixes are flushed when tracking is re-established, not now: if Redis
      // itself went away, the cached copies are what stale-if-error serves meanwhile.
      if (tracking_.exchange(false)) {
        spdlog::warn("tracking connection lost; cached prefixes are flushed once it is back");
        backoff = upstream_.reconnect_backoff_min;
      }
      reconnects_.fetch_add(1, std::memory_order_relaxed);
      backoff_timer_.expires_after(backoff);
      backoff = std::min(backoff * 2, upstream_.reconnect_backoff_max);
    }
    if (stopping_) break;
    error_code ignored;
    co_await backoff_timer_.async_wait(asio::redirect_error(use_awaitable, ignored));
  }
}

awaitable<void> InvalidationListener::serve(const std::vector<std::string>& prefixes) {
  if (!co_await connect()) co_return;
  std::string reply;
  if (!upstream_.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!upstream_.username.empty()) auth.push_back(upstream_.username);
    auth.push_back(upstream_.password);
    if (!co_await call(auth, reply) || reply.front() == '-') co_return;
  }
  // Named vectors, not braced temporaries: g++ 12 miscompiles those inside co_await operands.
  const std::vector<std::string> set_name{"CLIENT", "SETNAME", std::string(kConnectionName)};
  const std::vector<std::string> client_id{"CLIENT", "ID"};
  const std::vector<std::string> subscribe{"SUBSCRIBE", std::string(kChannel)};
  if (!co_await call(set_name, reply)) co_return;
  if (!co_await call(client_id, reply) || reply.front() != ':') co_return;
  const std::string own_id = reply.substr(1, reply.size() - 3);
  std::vector<std::string> tracking{"CLIENT", "TRACKING", "on", "REDIRECT", own_id, "BCAST"};
  for (const auto& prefix : prefixes) {
    tracking.push_back("PREFIX");
    tracking.push_back(prefix);
  }
  if (!co_await call(tracking, reply) || reply.front() == '-') {
    spdlog::error("CLIENT TRACKING refused: {}", reply);
    co_return;
  }
  if (!co_await call(subscribe, reply)) co_return;
  // Writes made while nobody was tracking went unseen: start from an empty cache for these.
  flush(prefixes);
  tracking_.store(true, std::memory_order_relaxed);
  spdlog::info("tracking {} prefixes on the upstream for invalidation", prefixes.size());
  while (!stopping_ && co_await read_reply(reply)) apply(reply, prefixes);
}

awaitable<bool> InvalidationListener::connect() {
  socket_ = asio::ip::tcp::socket(executor_);
  buffer_.clear();
  buffered_ = 0;
  const auto& server = upstream_.servers.front();
  asio::ip::tcp::resolver resolver(executor_);
  asio::steady_timer deadline(executor_);
  deadline.expires_after(upstream_.connect_timeout);
  deadline.async_wait([this, &resolver, self = shared_from_this()](error_code ec) {
    if (ec) return;
    resolver.cancel();
    error_code ignored;
    socket_.close(ignored);
  });
  error_code ec;
  auto endpoints = co_await resolver.async_resolve(server.host, std::to_string(server.port),
                                                   asio::redirect_error(use_awaitable, ec));
  if (!ec && !stopping_) {
    co_await asio::async_connect(socket_, endpoints, asio::redirect_error(use_awaitable, ec));
  }
  deadline.cancel();
  co_return !ec && !stopping_ && socket_.is_open();
}

awaitable<bool> InvalidationListener::call(const std::vector<std::string>& argv,
                                           std::string& reply) {
  std::vector<std::string_view> views(argv.begin(), argv.end());
  std::string command;
  resp::append_command(command, views);
  error_code ec;
  co_await asio::async_write(socket_, asio::buffer(command),
                             asio::redirect_error(use_awaitable, ec));
  if (ec) co_return false;
  co_return co_await read_reply(reply);
}

awaitable<bool> InvalidationListener::read_reply(std::string& reply) {
  for (;;) {
    const auto frame = resp::frame_reply(std::string_view(buffer_).substr(0, buffered_));
    if (frame.status == resp::FrameStatus::invalid) co_return false;
    if (frame.status == resp::FrameStatus::complete) {
      reply.assign(buffer_, 0, frame.size);
      buffer_.erase(0, frame.size);
      buffered_ -= frame.size;
      co_return true;
    }
    if (buffer_.size() - buffered_ < 4096) buffer_.resize(buffered_ + 16384);
    error_code ec;
    const auto n = co_await socket_.async_read_some(
        asio::buffer(buffer_.data() + buffered_, buffer_.size() - buffered_),
        asio::redirect_error(use_awaitable, ec));
    if (ec) co_return false;
    buffered_ += n;
  }
}

void InvalidationListener::apply(std::string_view message,
                                 const std::vector<std::string>& prefixes) {
  const auto decoded = resp::decode_reply(message);
  if (!decoded || decoded->type != resp::Reply::Type::array || decoded->elements.size() != 3 ||
      decoded->elements[0].text != "message") {
    return;  // subscription confirmations and the like
  }
  const auto& keys = decoded->elements[2];
  if (keys.type == resp::Reply::Type::null) {
    flush(prefixes);  // FLUSHALL / FLUSHDB upstream
    return;
  }
  for (const auto& key : keys.elements) {
    runtime_.invalidate_key(key.text, InvalidationSource::tracking);
    if (invalidated_) invalidated_(key.text);
  }
}

void InvalidationListener::flush(const std::vector<std::string>& prefixes) {
  for (const auto& prefix : prefixes) {
    runtime_.invalidate_prefix(prefix, InvalidationSource::tracking);
  }
}

}  // namespace corral::stampede
