// The URL template of an http origin (`http://host:port/v1/features/{key}`): parsed once into the
// address and path pieces, then expanded per key into a request target. Pure (no Asio, no I/O):
// the config loader validates templates with it, the http origin expands them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corral::config {

// Percent-encodes every byte except the RFC 3986 unreserved characters (A-Z a-z 0-9 - . _ ~),
// so a key cannot add path segments, a query or a fragment to the URL.
std::string url_escape(std::string_view text);

// `url` with every query value replaced by `***`: origin URLs carry API tokens in their query
// (`?api_key=...`), and error replies and log lines must not show them.
std::string redact_query(std::string_view url);

// For --check-config: the template with the literal values of query parameters whose names look
// like credentials (token, secret, password, key, auth, sig) masked; placeholders stay readable.
std::string redact_template(std::string_view text);

// Contract: parse() never throws; a template it refuses has ok() false and error() saying why,
// and then expands to nothing useful. Placeholders are only allowed after the authority (the
// host is fixed: one connection pool per origin).
class UrlTemplate {
 public:
  static UrlTemplate parse(std::string_view text);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  // The host as given (an IPv6 literal without its brackets) and the port (80 by default).
  const std::string& host() const { return host_; }
  std::uint16_t port() const { return port_; }
  // The Host header: the authority as written in the template ("[::1]:8080", "features").
  const std::string& authority() const { return authority_; }

  // The request target ("/v1/features/a%20b?x=1") for `key`; {suffix} is the key without
  // `prefix` (the whole key when it does not start with it). Nothing when a placeholder would make
  // a path segment empty, "." or "..": escaping cannot help there (servers and the proxies in
  // front of them normalise "%2E%2E" to ".." too), so such a key must not reach the origin.
  std::optional<std::string> target(std::string_view key, std::string_view prefix) const;
  // The absolute URL of the same request, for error messages (query values redacted).
  std::optional<std::string> url(std::string_view key, std::string_view prefix) const;

 private:
  enum class Piece : std::uint8_t { literal, key, suffix };
  struct Segment {
    Piece piece = Piece::literal;
    std::string text;  // literal only
  };

  std::string error_;
  std::string host_;
  std::string authority_;
  std::uint16_t port_ = 80;
  std::vector<Segment> path_;  // starts with a literal "/"
};

}  // namespace corral::config
