// The grammar of typed scalar values in the config: durations, sizes, numbers, addresses, ${ENV}.
// Pure functions over text (no YAML), so they are tested alone and reused by describe().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "config/settings.hpp"

namespace corral::config {

// A parsed value, or the reason the text was refused ("expected a duration like 300ms, 10s, 5m").
template <class T>
struct Parsed {
  std::optional<T> value;
  std::string error;

  static Parsed ok(T v) { return {std::move(v), {}}; }
  static Parsed fail(std::string why) { return {std::nullopt, std::move(why)}; }
  explicit operator bool() const { return value.has_value(); }
  const T& operator*() const { return *value; }
  const T* operator->() const { return &*value; }
};

// `300ms`, `10s`, `5m`, `1h`, `1d`, sums like `1h30m`, and a bare `0`; a leading `-` is accepted so
// that range checks can say "must be >= 0" instead of a type error. Units are case-insensitive.
Parsed<Duration> parse_duration(std::string_view text);
// Plain bytes or `64kb`, `512mb`, `1gb` (also b, k, m, g, t, tb); 1024-based, case-insensitive.
Parsed<std::uint64_t> parse_size(std::string_view text);
// Decimal integer with an optional leading `-`.
Parsed<std::int64_t> parse_integer(std::string_view text);
// Finite decimal number (`0.2`, `1`, `1e-3`).
Parsed<double> parse_number(std::string_view text);
// true/false, yes/no, on/off (case-insensitive), as YAML 1.1 users expect.
Parsed<bool> parse_bool(std::string_view text);
// `host:port` or `[v6]:port`; port 0 (an ephemeral port) only when `allow_port_zero`.
Parsed<Endpoint> parse_endpoint(std::string_view text, bool allow_port_zero);

struct RedisUrl {
  Endpoint endpoint;
  bool tls = false;      // rediss://
  std::string username;  // percent-decoded
  std::string password;  // percent-decoded
  int database = 0;
};
// `redis[s]://[user[:pass]@]host[:port][/db]` (port defaults to 6379, db to 0).
Parsed<RedisUrl> parse_redis_url(std::string_view text);

// Looks up an environment variable; nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_env();
// Replaces `${NAME}` (an error naming NAME if unset) and `${NAME:-default}` (default when unset or
// empty); `$${` stands for a literal `${`. Any other `$` is literal, so passwords rarely need
// escaping.
Parsed<std::string> expand_env(std::string_view text, const EnvLookup& env);
// The inverse of expand_env for a literal value: `${` becomes `$${`.
std::string escape_env(std::string_view text);

// Canonical renderings, accepted back by the parsers above (describe() relies on that).
std::string format_duration(Duration d);   // largest exact unit: 1h, 5m, 10s, 300ms, 0
std::string format_size(std::uint64_t n);  // largest exact unit: 1gb, 512mb, 64kb, or bytes
std::string format_number(double v);       // shortest text that reads back the same value
std::string format_endpoint(const Endpoint& e);
std::string format_redis_url(const Endpoint& e, int database, bool tls = false);  // no credentials

std::string to_upper(std::string_view text);
std::string to_lower(std::string_view text);

}  // namespace corral::config
