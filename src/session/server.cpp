// The I/O layer's threads: one Worker per io thread, a listener that spreads clients across them,
// and an admin thread for the metrics endpoint and signals.
#include "session/server.hpp"

#include <cassert>
#include <stdexcept>
#include <variant>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "config/loader.hpp"
#include "metrics/http_endpoint.hpp"
#include "session/session.hpp"
#include "session/worker.hpp"
#include "tls/context.hpp"

namespace corral::session {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;

struct Server::Admin {
  asio::io_context io{1};
  asio::ip::tcp::acceptor acceptor{io};      // plain clients (closed when listen_plain is off)
  asio::ip::tcp::acceptor tls_acceptor{io};  // TLS clients (closed without tls.listen)
  // Replaced by SIGHUP; sessions keep the SSL_CTX they started with (OpenSSL counts references).
  std::shared_ptr<asio::ssl::context> tls_context;
  std::unique_ptr<metrics::HttpEndpoint> endpoint;
  asio::steady_timer drain_timer{io};
  std::size_t max_clients = 0;  // client.max_clients, replaced by SIGHUP (on this thread)
};

namespace {
asio::ip::tcp::endpoint resolve_listen(const config::Endpoint& listen) {
  return {asio::ip::make_address(listen.host), listen.port};
}

// Sent to a client over max_clients before it is closed, as Redis does.
constexpr std::string_view kTooManyClients = "-ERR max number of clients reached\r\n";
}  // namespace

Server::Server(const config::Settings& settings, metrics::Metrics& metrics,
               metrics::ProcessInfo& info)
    : settings_(settings), metrics_(metrics), info_(info), admin_(std::make_unique<Admin>()) {
  info_.threads = settings_.threads;
  admin_->max_clients = settings_.client.max_clients;
  for (int i = 0; i < settings_.threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(settings_, metrics_.thread(i), info_));
  }
}

Server::~Server() {
  // Every context's handlers go first, while every context's services still exist (see IoContext).
  for (auto& worker : workers_) worker->io.shutdown();
}

asio::io_context& Server::io(int thread) { return workers_.at(thread)->io; }

void Server::set_handler(int thread, Handler& handler) { workers_.at(thread)->handler = &handler; }

void Server::set_slowlog(slowlog::SlowLog& log) {
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    workers_[i]->slowlog = &log;
    workers_[i]->index = i;
  }
}

namespace {
void open_acceptor(asio::ip::tcp::acceptor& acceptor, const config::Endpoint& listen) {
  const auto endpoint = resolve_listen(listen);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
}

// Starts a session of the listener's kind on the worker's thread.
void start_session(Worker& worker, asio::ip::tcp::socket socket,
                   const std::shared_ptr<asio::ssl::context>& tls_context) {
  if (!tls_context) {
    asio::post(worker.io, [&worker, socket = std::move(socket)]() mutable {
      std::make_shared<PlainSession>(std::move(socket), worker)->start();
    });
    return;
  }
  asio::post(worker.io, [&worker, socket = std::move(socket), tls_context]() mutable {
    std::make_shared<TlsSession>(TlsStream(std::move(socket), *tls_context), worker)->start();
  });
}
}  // namespace

// One loop per listener; `tls_context` (null for the plain listener) is read at each accept, so a
// reloaded certificate serves the next client.
static awaitable<void> accept_loop(asio::ip::tcp::acceptor& acceptor,
                                   const std::shared_ptr<asio::ssl::context>* tls_context,
                                   std::vector<std::unique_ptr<Worker>>& workers,
                                   metrics::ProcessInfo& info, const std::size_t& max_clients) {
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
        static_cast<std::int64_t>(max_clients)) {
      worker.stats.client_rejected();
      asio::write(socket, asio::buffer(kTooManyClients), ec);
      socket.close(ec);
      continue;
    }
    start_session(worker, std::move(socket), tls_context ? *tls_context : nullptr);
  }
}

void Server::reload_tls(const config::Settings& fresh) {
  if (!fresh.tls.listen || !admin_->tls_context) return;
  auto built = tls::make_server_context(fresh.tls);
  if (!built.context) {
    spdlog::error("SIGHUP: TLS: {}; keeping the running certificate", built.error);
    return;
  }
  admin_->tls_context = std::move(built.context);
  spdlog::info("SIGHUP: TLS certificate reloaded from {}", fresh.tls.files.cert);
}

// client.*: max_clients for the next accept; every io thread gets its copy of the rest on its own
// thread, for the requests it reads from then on (a session's parser limits are set when it
// starts).
void Server::reload_client_settings(const config::Settings& fresh) {
  admin_->max_clients = fresh.client.max_clients;
  for (auto& worker : workers_) {
    asio::post(worker->io, [w = worker.get(), client = fresh.client] { w->client = client; });
  }
}

// SIGHUP: re-read the config file and apply its policies and client settings; on any error keep
// the running ones. listen, metrics and threads need a restart, which the log says.
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
      reload_tls(fresh);
      reload_client_settings(fresh);
      if (reload_) reload_(fresh);
      spdlog::info(
          "SIGHUP: reloaded {} policies and the client settings from {} (listen, metrics and "
          "threads apply on restart; an upstream change is applied once the new one answers)",
          fresh.policies.size(), settings_.source);
    }
    wait_for_reload(signal);
  });
}

void Server::bind() {
  if (settings_.tls.listen) {
    auto built = tls::make_server_context(settings_.tls);
    if (!built.context) throw std::runtime_error("tls: " + built.error);
    admin_->tls_context = std::move(built.context);
    open_acceptor(admin_->tls_acceptor, *settings_.tls.listen);
  }
  if (settings_.listen_plain) open_acceptor(admin_->acceptor, settings_.listen);

  if (settings_.metrics) {
    admin_->endpoint = std::make_unique<metrics::HttpEndpoint>(
        admin_->io, *settings_.metrics, metrics_, [this]() -> std::string {
          if (info_.draining.load(std::memory_order_relaxed)) return "draining (SIGTERM)";
          return not_ready_reason_ ? not_ready_reason_() : std::string();
        });
    admin_->endpoint->start();
  }
}

unsigned short Server::port() const {
  error_code ec;
  const auto endpoint = admin_->acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

unsigned short Server::tls_port() const {
  error_code ec;
  const auto endpoint = admin_->tls_acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

void Server::stop() {
  asio::post(admin_->io, [this] {
    error_code ignored;
    admin_->acceptor.close(ignored);
    admin_->tls_acceptor.close(ignored);
    if (admin_->endpoint) admin_->endpoint->stop();
    for (auto& worker : workers_) worker->io.stop();
    admin_->io.stop();
  });
}

void Server::drain() {
  asio::post(admin_->io, [this] {
    if (info_.draining.exchange(true)) return;
    error_code ignored;
    admin_->acceptor.close(ignored);
    admin_->tls_acceptor.close(ignored);
    for (auto& worker : workers_) {
      asio::post(worker->io, [w = worker.get()] {
        w->draining = true;
        // drain() may end a session (and erase it from the set) before returning.
        const std::vector<Drainable*> sessions(w->sessions.begin(), w->sessions.end());
        for (auto* session : sessions) {
          if (w->sessions.count(session) != 0) session->drain();
        }
      });
    }
    const auto deadline = std::chrono::steady_clock::now() + settings_.shutdown_timeout;
    wait_for_drain(deadline);
  });
}

// Polled, not signalled: it runs once per process, and a counter the sessions already keep
// saves them a wake-up path of their own.
void Server::wait_for_drain(std::chrono::steady_clock::time_point deadline) {
  constexpr auto kPoll = std::chrono::milliseconds(20);
  const auto left = info_.connected_clients.load(std::memory_order_relaxed);
  if (left <= 0 || std::chrono::steady_clock::now() >= deadline) {
    if (left > 0) {
      spdlog::warn("shutdown_timeout ({} ms) passed with {} clients still waiting; closing them",
                   settings_.shutdown_timeout.count(), left);
    } else {
      spdlog::info("every client got its last reply; exiting");
    }
    stop();
    return;
  }
  admin_->drain_timer.expires_after(kPoll);
  admin_->drain_timer.async_wait([this, deadline](const error_code& ec) {
    if (!ec) wait_for_drain(deadline);
  });
}

void Server::run() {
  bind();
  serve();
}

// ReadyRead's one blind spot (a client whose last bytes and hang-up arrived in one wake-up): each
// session whose last read was taken as draining the socket, and quiet for a whole interval since,
// is checked once. The interval bounds how long such a client's socket stays open (one to two
// intervals) and costs a timer wake-up per interval per thread, idle or not.
static awaitable<void> hangup_sweep(Worker& worker) {
  constexpr auto kEvery = std::chrono::milliseconds(100);
  asio::steady_timer timer(worker.io);
  for (;;) {
    timer.expires_after(kEvery);
    error_code ec;
    co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
    if (ec) co_return;
    // check_hangup ends no session itself, so the set does not change under the loop.
    for (auto* session : worker.sessions) session->check_hangup();
  }
}

void Server::serve() {
  asio::signal_set reload_signal(admin_->io, SIGHUP);
  wait_for_reload(reload_signal);
  asio::signal_set signals(admin_->io, SIGINT, SIGTERM);
  signals.async_wait([this](const error_code& ec, int signal_number) {
    if (ec) return;
    spdlog::info("signal {}: draining (listener closed; answering what was read, up to {} ms)",
                 signal_number, settings_.shutdown_timeout.count());
    drain();
  });

  if (admin_->acceptor.is_open()) {
    asio::co_spawn(admin_->io,
                   accept_loop(admin_->acceptor, nullptr, workers_, info_, admin_->max_clients),
                   asio::detached);
  }
  if (admin_->tls_acceptor.is_open()) {
    asio::co_spawn(admin_->io,
                   accept_loop(admin_->tls_acceptor, &admin_->tls_context, workers_, info_,
                               admin_->max_clients),
                   asio::detached);
  }
  for (auto& worker : workers_) {
    Worker* w = worker.get();
    assert(w->handler != nullptr);
    asio::co_spawn(w->io, hangup_sweep(*w), asio::detached);
    w->thread = std::thread([w] { w->io.run(); });
  }
  if (settings_.listen_plain) {
    spdlog::info("corral {} listening on {}:{} with {} io threads", CORRAL_VERSION,
                 settings_.listen.host, port(), settings_.threads);
  }
  if (settings_.tls.listen) {
    spdlog::info("corral {} listening for TLS clients on {}:{}", CORRAL_VERSION,
                 settings_.tls.listen->host, tls_port());
  }
  admin_->io.run();
  for (auto& worker : workers_) {
    if (worker->thread.joinable()) worker->thread.join();
  }
}

}  // namespace corral::session
