// Parsers and formatters for the typed scalar values of the config (see values.hpp for the
// grammar).
#include "config/values.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace corral::config {
namespace {

constexpr std::string_view kDurationExpected = "expected a duration like 300ms, 10s, 5m";
constexpr std::string_view kSizeExpected = "expected a size like 64kb, 512mb, 1gb";
constexpr std::string_view kEndpointExpected = "expected host:port like 127.0.0.1:6380";
constexpr std::string_view kRedisUrlExpected =
    "expected redis://[user:pass@]host:port[/db] (or rediss:// for TLS)";

struct Unit {
  std::string_view name;
  std::int64_t factor;
};

// Formatting picks the first unit that divides exactly, so the largest units come first.
constexpr std::array<Unit, 5> kDurationUnits{{
    {"d", 86'400'000},
    {"h", 3'600'000},
    {"m", 60'000},
    {"s", 1'000},
    {"ms", 1},
}};

constexpr std::array<Unit, 10> kSizeUnits{{
    {"tb", std::int64_t{1} << 40},
    {"gb", std::int64_t{1} << 30},
    {"mb", std::int64_t{1} << 20},
    {"kb", std::int64_t{1} << 10},
    {"b", 1},
    {"t", std::int64_t{1} << 40},
    {"g", std::int64_t{1} << 30},
    {"m", std::int64_t{1} << 20},
    {"k", std::int64_t{1} << 10},
    {"", 1},
}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

template <std::size_t N>
std::optional<std::int64_t> unit_factor(const std::array<Unit, N>& units, std::string_view name) {
  const std::string lower = to_lower(name);
  for (const Unit& u : units) {
    if (u.name == lower) return u.factor;
  }
  return std::nullopt;
}

// Consumes leading digits of `text` into `out`; false on no digits or overflow.
bool take_digits(std::string_view& text, std::int64_t& out) {
  std::size_t n = 0;
  while (n < text.size() && is_digit(text[n])) ++n;
  if (n == 0) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + n, out);
  if (ec != std::errc{} || ptr != text.data() + n) return false;
  text.remove_prefix(n);
  return true;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= text.size()) return std::nullopt;
    auto [ptr, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (ec != std::errc{} || ptr != text.data() + i + 3) return std::nullopt;
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

bool valid_env_name(std::string_view name) {
  if (name.empty() || is_digit(name[0])) return false;
  for (char c : name) {
    if (!is_digit(c) && !is_alpha(c) && c != '_') return false;
  }
  return true;
}

// The '}' closing a `${` whose body starts at `from`; braces nest so that a default may itself be
// a URL template: ${URL:-http://h/{key}}.
std::size_t matching_brace(std::string_view text, std::size_t from) {
  int depth = 0;
  for (std::size_t i = from; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && depth-- == 0) return i;
  }
  return std::string_view::npos;
}

}  // namespace

Parsed<Duration> parse_duration(std::string_view text) {
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) text.remove_prefix(1);
  if (text == "0") return Parsed<Duration>::ok(Duration{0});
  if (text.empty()) return Parsed<Duration>::fail(std::string(kDurationExpected));
  std::int64_t total = 0;
  while (!text.empty()) {
    std::int64_t count = 0;
    if (!take_digits(text, count)) return Parsed<Duration>::fail(std::string(kDurationExpected));
    std::size_t n = 0;
    while (n < text.size() && is_alpha(text[n])) ++n;
    // A bare number other than 0 is refused: "10" could mean seconds or milliseconds.
    const auto factor = unit_factor(kDurationUnits, text.substr(0, n));
    if (n == 0 || !factor) return Parsed<Duration>::fail(std::string(kDurationExpected));
    text.remove_prefix(n);
    std::int64_t part = 0;
    if (__builtin_mul_overflow(count, *factor, &part) ||
        __builtin_add_overflow(total, part, &total))
      return Parsed<Duration>::fail("duration is too large");
  }
  return Parsed<Duration>::ok(Duration{negative ? -total : total});
}

Parsed<std::uint64_t> parse_size(std::string_view text) {
  std::int64_t count = 0;
  if (!take_digits(text, count)) return Parsed<std::uint64_t>::fail(std::string(kSizeExpected));
  while (!text.empty() && text[0] == ' ') text.remove_prefix(1);
  const auto factor = unit_factor(kSizeUnits, text);
  if (!factor) return Parsed<std::uint64_t>::fail(std::string(kSizeExpected));
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(count, *factor, &bytes))
    return Parsed<std::uint64_t>::fail("size is too large");
  return Parsed<std::uint64_t>::ok(static_cast<std::uint64_t>(bytes));
}

Parsed<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size())
    return Parsed<std::int64_t>::fail("expected an integer");
  return Parsed<std::int64_t>::ok(value);
}

Parsed<double> parse_number(std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size() ||
      !std::isfinite(value))
    return Parsed<double>::fail("expected a number");
  return Parsed<double>::ok(value);
}

Parsed<bool> parse_bool(std::string_view text) {
  const std::string lower = to_lower(text);
  if (lower == "true" || lower == "yes" || lower == "on") return Parsed<bool>::ok(true);
  if (lower == "false" || lower == "no" || lower == "off") return Parsed<bool>::ok(false);
  return Parsed<bool>::fail("expected true or false");
}

Parsed<Endpoint> parse_endpoint(std::string_view text, bool allow_port_zero) {
  std::string_view host;
  std::string_view port_text;
  if (!text.empty() && text[0] == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return Parsed<Endpoint>::fail(std::string(kEndpointExpected));
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return Parsed<Endpoint>::fail(std::string(kEndpointExpected));
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return Parsed<Endpoint>::fail("IPv6 addresses go in brackets, like [::1]:6380");
  }
  if (host.empty() || host.find_first_of(" \t/@") != std::string_view::npos)
    return Parsed<Endpoint>::fail(std::string(kEndpointExpected));
  std::int64_t port = 0;
  std::string_view rest = port_text;
  if (!take_digits(rest, port) || !rest.empty())
    return Parsed<Endpoint>::fail(std::string(kEndpointExpected));
  if (port > 65535 || (port == 0 && !allow_port_zero))
    return Parsed<Endpoint>::fail(allow_port_zero ? "port must be in 0..65535"
                                                  : "port must be in 1..65535");
  return Parsed<Endpoint>::ok(Endpoint{std::string(host), static_cast<std::uint16_t>(port)});
}

Parsed<RedisUrl> parse_redis_url(std::string_view text) {
  const std::string scheme = to_lower(text.substr(0, text.find("://") + 3));
  if (scheme != "redis://" && scheme != "rediss://") {
    return Parsed<RedisUrl>::fail(std::string(kRedisUrlExpected));
  }
  std::string_view rest = text.substr(scheme.size());
  RedisUrl url;
  url.tls = scheme == "rediss://";
  // The last '@' ends the credentials, so an unescaped '@' in a password still works.
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    const auto colon = userinfo.find(':');
    auto user = percent_decode(userinfo.substr(0, colon));
    auto pass = percent_decode(colon == std::string_view::npos ? "" : userinfo.substr(colon + 1));
    if (!user || !pass) return Parsed<RedisUrl>::fail("bad %-escape in the credentials");
    url.username = std::move(*user);
    url.password = std::move(*pass);
    rest.remove_prefix(at + 1);
  }
  const auto slash = rest.find('/');
  std::string authority(rest.substr(0, slash));
  if (authority.empty() || authority.back() == ']' || authority.find(':') == std::string::npos)
    authority += ":6379";
  auto endpoint = parse_endpoint(authority, false);
  if (!endpoint) return Parsed<RedisUrl>::fail(std::string(kRedisUrlExpected));
  url.endpoint = *endpoint;
  if (slash != std::string_view::npos && slash + 1 < rest.size()) {
    std::string_view db = rest.substr(slash + 1);
    std::int64_t number = 0;
    if (!take_digits(db, number) || !db.empty() || number > std::numeric_limits<int>::max())
      return Parsed<RedisUrl>::fail("the database after '/' must be a number");
    url.database = static_cast<int>(number);
  }
  return Parsed<RedisUrl>::ok(std::move(url));
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Parsed<std::string> expand_env(std::string_view text, const EnvLookup& env) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i, 3) == "$${") {
      out += "${";
      i += 3;
      continue;
    }
    if (text.substr(i, 2) != "${") {
      out += text[i++];
      continue;
    }
    const auto close = matching_brace(text, i + 2);
    if (close == std::string_view::npos) return Parsed<std::string>::fail("unterminated ${");
    const std::string_view inner = text.substr(i + 2, close - i - 2);
    const auto sep = inner.find(":-");
    const std::string name(inner.substr(0, sep));
    if (!valid_env_name(name))
      return Parsed<std::string>::fail("bad environment variable name in ${" + std::string(inner) +
                                       "}");
    const auto value = env(name);
    if (value && !value->empty()) {
      out += *value;
    } else if (sep != std::string_view::npos) {
      out += inner.substr(sep + 2);
    } else if (!value) {
      return Parsed<std::string>::fail("environment variable " + name + " is not set (write ${" +
                                       name + ":-default} to give a default)");
    }
    i = close + 1;
  }
  return Parsed<std::string>::ok(std::move(out));
}

std::string escape_env(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i, 2) == "${") out += '$';
    out += text[i];
  }
  return out;
}

std::string format_duration(Duration d) {
  const std::int64_t ms = d.count();
  if (ms == 0) return "0";
  if (ms < 0) return "-" + format_duration(Duration{-ms});
  // Days read back fine but hours are how people write long windows (24h, 48h).
  for (const Unit& u : kDurationUnits) {
    if (u.name != "d" && ms % u.factor == 0)
      return std::to_string(ms / u.factor) + std::string(u.name);
  }
  return std::to_string(ms) + "ms";
}

std::string format_size(std::uint64_t n) {
  if (n == 0) return "0";
  for (const Unit& u : kSizeUnits) {
    const auto factor = static_cast<std::uint64_t>(u.factor);
    if (u.name.size() == 2 && n % factor == 0)
      return std::to_string(n / factor) + std::string(u.name);
  }
  return std::to_string(n);
}

std::string format_number(double v) {
  std::array<char, 32> buf{};
  auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return ec == std::errc{} ? std::string(buf.data(), ptr) : std::to_string(v);
}

std::string format_endpoint(const Endpoint& e) {
  const bool v6 = e.host.find(':') != std::string::npos;
  return (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
}

std::string format_redis_url(const Endpoint& e, int database, bool tls) {
  std::string url = (tls ? "rediss://" : "redis://") + format_endpoint(e);
  if (database != 0) url += "/" + std::to_string(database);
  return url;
}

std::string to_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace corral::config
