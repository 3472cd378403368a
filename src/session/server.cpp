// Server wiring: one Worker per io thread, a listener that spreads clients across them, and an
// admin thread for the metrics endpoint and signals.
#include "session/server.hpp"

#include <variant>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "config/loader.hpp"
#include "metrics/http_endpoint.hpp"
#include "session/session.hpp"
#include "session/worker.hpp"
#include "stampede/invalidation_listener.hpp"
#include "stampede/versioned/pointer_watch.hpp"

namespace corral::session {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;

struct Server::Admin {
  asio::io_context io{1};
  asio::ip::tcp::acceptor acceptor{io};
  std::unique_ptr<metrics::HttpEndpoint> endpoint;
};

namespace {
asio::ip::tcp::endpoint resolve_listen(const config::Endpoint& listen) {
  return {asio::ip::make_address(listen.host), listen.port};
}

// Sent to a client over max_clients before it is closed, as Redis does.
constexpr std::string_view kTooManyClients = "-ERR max number of clients reached\r\n";
}  // namespace

Server::Server(const config::Settings& settings, metrics::Metrics& metrics)
    : settings_(settings), metrics_(metrics), admin_(std::make_unique<Admin>()) {
  info_.threads = settings_.threads;
  cache_ = std::make_unique<stampede::CacheRuntime>(settings_, cache::SystemClock::instance(),
                                                    metrics_.registry());
  metrics_.add_collectable(cache_->collectable());
  for (int i = 0; i < settings_.threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(settings_, metrics_.thread(i), info_, *cache_));
  }
}

Server::~Server() = default;

static awaitable<void> accept_loop(asio::ip::tcp::acceptor& acceptor,
                                   std::vector<std::unique_ptr<Worker>>& workers,
                                   proxy::ProcessInfo& info, const config::Settings& settings) {
  std::size_t next = 0;
  for (;;) {
    Worker& worker = *workers[next++ % workers.size()];
    error_code ec;
    auto socket =
        co_await acceptor.async_accept(worker.io, asio::redirect_error(use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // Out of descriptors and the like: keep serving the clients already connected.
      spdlog::warn("accept failed: {}", ec.message());
      continue;
    }
    if (info.connected_clients.load(std::memory_order_relaxed) >=
        static_cast<std::int64_t>(settings.client.max_clients)) {
      worker.stats.client_rejected();
      asio::write(socket, asio::buffer(kTooManyClients), ec);
      socket.close(ec);
      continue;
    }
    asio::post(worker.io, [&worker, socket = std::move(socket)]() mutable {
      std::make_shared<Session>(std::move(socket), worker)->start();
    });
  }
}

// SIGHUP: re-read the config file and apply its policies; on any error keep the running ones.
// Other settings (addresses, threads, limits) need a restart, which the log says.
void Server::wait_for_reload(asio::signal_set& signal) {
  signal.async_wait([this, &signal](const error_code& ec, int) {
    if (ec) return;
    auto loaded = config::load_settings_file(settings_.source);
    if (auto* errors = std::get_if<config::ConfigErrors>(&loaded)) {
      spdlog::error("SIGHUP: {} has {} error(s); keeping the running config", settings_.source,
                    errors->messages.size());
      for (const auto& message : errors->messages) spdlog::error("  {}", message);
    } else {
      const auto& fresh = std::get<config::Settings>(loaded);
      cache_->reload(fresh.policies);
      asio::post(workers_.front()->io, [this] { listener_->restart(); });
      spdlog::info("SIGHUP: reloaded {} policies from {} (other settings apply on restart)",
                   fresh.policies.size(), settings_.source);
    }
    wait_for_reload(signal);
  });
}

void Server::run() {
  auto& acceptor = admin_->acceptor;
  const auto endpoint = resolve_listen(settings_.listen);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);

  if (settings_.upstream.cluster) {
    spdlog::warn(
        "upstream cluster: slot routing is not implemented yet; every command goes to "
        "the first seed, {}:{}, as to a standalone Redis",
        settings_.upstream.servers.front().host, settings_.upstream.servers.front().port);
  }
  std::atomic<int>& ready = info_.ready_upstream_connections;
  if (settings_.metrics) {
    admin_->endpoint = std::make_unique<metrics::HttpEndpoint>(
        admin_->io, *settings_.metrics, metrics_,
        [&ready] { return ready.load(std::memory_order_relaxed) > 0; });
    admin_->endpoint->start();
  }

  asio::signal_set reload_signal(admin_->io, SIGHUP);
  wait_for_reload(reload_signal);
  asio::signal_set signals(admin_->io, SIGINT, SIGTERM);
  signals.async_wait([this, &reload_signal](const error_code& ec, int signal_number) {
    if (ec) return;
    spdlog::info("signal {}: shutting down", signal_number);
    error_code ignored;
    admin_->acceptor.close(ignored);
    if (admin_->endpoint) admin_->endpoint->stop();
    reload_signal.cancel();
    for (auto& worker : workers_) worker->io.stop();
    admin_->io.stop();
  });

  asio::co_spawn(admin_->io, accept_loop(acceptor, workers_, info_, settings_), asio::detached);
  // The listener lives on the first io thread; on_invalidate: refresh refetches through it.
  auto& first = *workers_.front();
  listener_ = std::make_shared<stampede::InvalidationListener>(
      first.io.get_executor(), settings_.upstream, *cache_,
      [&first](std::string_view key) { first.read_through.refresh_invalidated(key); });
  asio::post(workers_.front()->io, [this] { listener_->start(); });
  // Versioned policies follow their pointer keys from the same thread (kept alive by its timer).
  const auto pointer_watch =
      std::make_shared<stampede::PointerWatch>(first.io.get_executor(), first.pool, *cache_);
  asio::post(first.io, [pointer_watch] { pointer_watch->start(); });
  for (auto& worker : workers_) {
    Worker* w = worker.get();
    asio::post(w->io, [w] { w->pool.start(); });
    w->thread = std::thread([w] { w->io.run(); });
  }
  spdlog::info("corral {} listening on {}:{} with {} io threads, upstream {}:{}", CORRAL_VERSION,
               settings_.listen.host, settings_.listen.port, settings_.threads,
               settings_.upstream.servers.front().host, settings_.upstream.servers.front().port);
  admin_->io.run();
  for (auto& worker : workers_) {
    if (worker->thread.joinable()) worker->thread.join();
  }
}

}  // namespace corral::session
