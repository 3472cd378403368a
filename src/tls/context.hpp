// TLS contexts built from the config's PEM files, for the client listener and for upstream
// connections. Every failure names the file and OpenSSL's reason, at start-up, in --check-config
// and on SIGHUP (which keeps the old context when the new files are bad).
#pragma once

#include <utility>

#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include "config/settings.hpp"

namespace corral::tls {

struct ContextResult {
  std::shared_ptr<boost::asio::ssl::context> context;  // null when `error` says why
  std::string error;
};

// The listener's context: its certificate and key, TLS >= min_version, and when `ca` is set,
// clients must present a certificate it signed (mTLS).
ContextResult make_server_context(const config::ClientTlsSettings& settings);

// The upstream's context: verifies the server against `ca` (or the system's CAs) unless verify is
// off, and presents cert/key when they are set.
ContextResult make_client_context(const config::UpstreamTlsSettings& settings);

}  // namespace corral::tls
