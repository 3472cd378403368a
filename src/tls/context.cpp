// ssl::context set-up through OpenSSL directly where Asio would throw: errors are returned, with
// the file and the reason from OpenSSL's error queue.
#include "tls/context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace corral::tls {

namespace asio = boost::asio;

namespace {

// Drains OpenSSL's error queue into one line (the most specific reason last, as OpenSSL pushes).
std::string openssl_reason() {
  std::string reason;
  while (const unsigned long code = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    if (!reason.empty()) reason += "; ";
    reason += text;
  }
  return reason.empty() ? "unknown OpenSSL error" : reason;
}

ContextResult failure(const std::string& what, const std::string& file) {
  return {nullptr, what + " " + file + ": " + openssl_reason()};
}

// Loads cert and key (when given) and checks that they belong together.
std::string load_identity(SSL_CTX* ctx, const config::TlsFiles& files) {
  if (files.cert.empty() && files.key.empty()) return {};
  if (files.cert.empty() || files.key.empty()) return "cert and key go together: set both";
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) {
    return "cannot load the certificate " + files.cert + ": " + openssl_reason();
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return "cannot load the private key " + files.key + ": " + openssl_reason();
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return "the private key " + files.key + " does not match the certificate " + files.cert + ": " +
           openssl_reason();
  }
  return {};
}

}  // namespace

ContextResult make_server_context(const config::ClientTlsSettings& settings) {
  ERR_clear_error();
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  const int min_version = settings.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION;
  SSL_CTX_set_min_proto_version(ctx, min_version);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (auto error = load_identity(ctx, settings.files); !error.empty()) return {nullptr, error};
  if (!settings.files.ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, settings.files.ca.c_str(), nullptr) != 1) {
      return failure("cannot load the CA bundle", settings.files.ca);
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return {std::move(context), {}};
}

ContextResult make_client_context(const config::UpstreamTlsSettings& settings) {
  ERR_clear_error();
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  SSL_CTX* ctx = context->native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (auto error = load_identity(ctx, settings.files); !error.empty()) return {nullptr, error};
  if (settings.verify) {
    const bool loaded =
        settings.files.ca.empty()
            ? SSL_CTX_set_default_verify_paths(ctx) == 1
            : SSL_CTX_load_verify_locations(ctx, settings.files.ca.c_str(), nullptr) == 1;
    if (!loaded) return failure("cannot load the CA bundle", settings.files.ca);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  return {std::move(context), {}};
}

}  // namespace corral::tls
