// The options every upstream connection shares, from the upstream's settings: the server, Corral's
// own credentials, timeouts, backoff and the process's one TLS client context.
#include "upstream/connection.hpp"

#include <mutex>

#include <spdlog/spdlog.h>

#include "tls/context.hpp"

namespace corral::upstream {

namespace asio = boost::asio;

namespace {
// Built once: the upstream settings never change while the process runs. main checked at start
// that the files load, so a failure here is logged and leaves connections failing their handshake.
std::shared_ptr<asio::ssl::context> shared_client_context(const config::UpstreamTlsSettings& tls) {
  static std::once_flag once;
  static std::shared_ptr<asio::ssl::context> context;
  std::call_once(once, [&tls] {
    auto built = tls::make_client_context(tls);
    if (!built.context) spdlog::error("upstream.tls: {}", built.error);
    context = std::move(built.context);
  });
  return context;
}
}  // namespace

ConnectionOptions connection_options(const config::UpstreamSettings& upstream, int database,
                                     bool reconnect) {
  ConnectionOptions options;
  // Empty for a Sentinel upstream, whose connections each name the server they reach.
  if (!upstream.servers.empty()) options.server = upstream.servers.front();
  options.username = upstream.username;
  options.password = upstream.password;
  options.database = database;
  options.connect_timeout = upstream.connect_timeout;
  options.command_timeout = upstream.command_timeout;
  options.max_in_flight = upstream.max_in_flight;
  options.backoff_min = upstream.reconnect_backoff_min;
  options.backoff_max = upstream.reconnect_backoff_max;
  options.reconnect = reconnect;
  if (upstream.tls.enabled) {
    options.tls_context = shared_client_context(upstream.tls);
    options.tls_server_name =
        upstream.tls.server_name.empty() ? options.server.host : upstream.tls.server_name;
  }
  return options;
}

ConnectionOptions node_connection_options(const config::UpstreamSettings& upstream,
                                          const config::Endpoint& node, bool reconnect) {
  auto options = connection_options(upstream, 0, reconnect);
  options.server = node;
  if (upstream.tls.enabled && upstream.tls.server_name.empty()) options.tls_server_name = node.host;
  return options;
}

}  // namespace corral::upstream
