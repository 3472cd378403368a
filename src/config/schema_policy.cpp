// The settings tables of `policies:`: one row per key of a policy, its origin and its versioning,
// plus the cross-field rules of a policy and of the list (unique prefixes).
#include <algorithm>
#include <cctype>
#include <map>

#include "config/schema.hpp"
#include "config/url_template.hpp"

namespace corral::config::schema {
namespace {

// Read-only commands whose reply for one key can be cached (the proxy's command table agrees).
constexpr std::array<std::string_view, 11> kCacheable{"GET",    "MGET",     "HGET",    "HGETALL",
                                                      "HMGET",  "SMEMBERS", "LRANGE",  "ZRANGE",
                                                      "EXISTS", "STRLEN",   "GETRANGE"};
// An HTTP body is a string, so only the string commands make sense on an http origin.
constexpr std::array<std::string_view, 5> kStringCommands{"GET", "MGET", "EXISTS", "STRLEN",
                                                          "GETRANGE"};

constexpr std::array<Choice<OnOverflow>, 3> kOnOverflow{{{"stale", OnOverflow::stale},
                                                         {"error", OnOverflow::error},
                                                         {"passthrough", OnOverflow::passthrough}}};
constexpr std::array<Choice<OnInvalidate>, 2> kOnInvalidate{
    {{"drop", OnInvalidate::drop}, {"refresh", OnInvalidate::refresh}}};
constexpr std::array<Choice<WritePolicy>, 2> kWrites{
    {{"refuse", WritePolicy::refuse}, {"passthrough", WritePolicy::passthrough}}};

constexpr std::array<Choice<ReadFrom>, 3> kFillReadFrom{
    {{"primary", ReadFrom::primary},
     {"prefer_replica", ReadFrom::prefer_replica},
     {"replica", ReadFrom::replica}}};

constexpr std::array<Choice<CacheControlMode>, 2> kCacheControl{
    {{"honor", CacheControlMode::honor}, {"ignore", CacheControlMode::ignore}}};

constexpr std::string_view kOriginExpected = "expected redis or { http: URL_TEMPLATE, ... }";

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Header values that carry credentials are masked by describe(), like passwords.
bool is_sensitive_header(const std::string& name) {
  const std::string lower = to_lower(name);
  if (lower == "authorization" || lower == "proxy-authorization" || lower == "cookie") return true;
  for (std::string_view word : {"token", "secret", "password", "key"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

void read_headers(Reader& r, const YAML::Node& n, const std::string& p, HttpOriginSettings& s) {
  if (n.IsNull()) return;
  if (!n.IsMap()) return r.error(n, p, "expected a map of header names to values");
  std::map<std::string, std::string> headers;
  std::map<std::string, bool> seen;  // lower-cased: HTTP header names are case-insensitive
  for (const auto& pair : n) {
    const std::string name = pair.first.IsScalar() ? pair.first.Scalar() : "";
    const std::string path = child(p, name);
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char)) {
      r.error(pair.first, path, "not a valid header name");
      continue;
    }
    if (seen[to_lower(name)]) {
      r.error(pair.first, path, "duplicate header");
      continue;
    }
    seen[to_lower(name)] = true;
    auto value = r.scalar(pair.second, path);
    if (!value) continue;
    // A CR or LF from an environment variable would let it inject headers or split the request.
    if (value->find_first_of(std::string("\r\n\0", 3)) != std::string::npos) {
      r.error(pair.second, path, "must not contain CR, LF or NUL");
      continue;
    }
    headers[name] = std::move(*value);
  }
  s.headers = std::move(headers);
}

YAML::Node show_headers(const HttpOriginSettings& s) {
  if (s.headers.empty()) return omitted();
  YAML::Node map(YAML::NodeType::Map);
  for (const auto& [name, value] : s.headers)
    map[name] = text_node(is_sensitive_header(name) ? "********" : value);
  return map;
}

const Table<HttpOriginSettings>& http_table() {
  using S = HttpOriginSettings;
  static const Table<S> table{
      {"http",
       [](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
         auto v = r.scalar(n, p);
         if (!v) return;
         if (const auto parsed = UrlTemplate::parse(*v); !parsed.ok())
           return r.error(n, p, parsed.error());
         s.url_template = std::move(*v);
       },
       [](const S& s) { return text_node(redact_template(s.url_template)); }},
      duration("timeout", &S::timeout, Min::positive),
      duration("connect_timeout", &S::connect_timeout, Min::positive),
      {"headers", read_headers, show_headers},
      size("max_body", &S::max_body),
      integer("max_connections", &S::max_connections, 1, 4096),
      integer("retries", &S::retries, 0, 10),
      choice("cache_control", &S::cache_control, kCacheControl),
      duration("max_ttl", &S::max_ttl, Min::positive),
  };
  return table;
}

const Table<VersionedSettings>& versioned_table() {
  using S = VersionedSettings;
  static const Table<S> table{
      text("pointer", &S::pointer, Text::required),
      integer("keep", &S::keep, 1, 1000),
      duration("grace", &S::grace, Min::zero),
      duration("pointer_refresh", &S::pointer_refresh, Min::positive),
  };
  return table;
}

void read_origin(Reader& r, const YAML::Node& n, const std::string& p, PolicySettings& s) {
  if (n.IsMap()) {
    read_map(r, n, p, http_table(), s.http);
    if (!has_key(n, "http")) r.error(n, p, "missing required key http (the URL template)");
    s.origin = OriginKind::http;
    return;
  }
  if (!n.IsScalar()) return r.error(n, p, std::string(kOriginExpected));
  const auto v = r.scalar(n, p);
  if (!v) return;
  if (to_lower(*v) != "redis") return r.error(n, p, std::string(kOriginExpected));
  s.origin = OriginKind::redis;
}

YAML::Node show_origin(const PolicySettings& s) {
  if (s.origin == OriginKind::redis) return text_node("redis");
  return show_map(http_table(), s.http);
}

void read_versioned(Reader& r, const YAML::Node& n, const std::string& p, PolicySettings& s) {
  if (n.IsNull()) return;  // `versioned:` with nothing under it: not versioned
  VersionedSettings v;
  read_map(r, n, p, versioned_table(), v);
  if (!n.IsMap()) return;
  if (!has_key(n, "pointer")) r.error(n, p, "missing required key pointer");
  s.versioned = std::move(v);
}

YAML::Node show_versioned(const PolicySettings& s) {
  return s.versioned ? show_map(versioned_table(), *s.versioned) : omitted();
}

// Header freshness is capped by max_ttl, by default ten times the policy's ttl; a cap below the
// ttl would make a response that states its freshness live shorter than one that does not.
void check_max_ttl(Reader& r, const YAML::Node& map, const std::string& p, PolicySettings& s) {
  const YAML::Node origin = map["origin"];
  if (!origin.IsMap() || !has_key(origin, "max_ttl")) {
    s.http.max_ttl = s.ttl * 10;
    return;
  }
  if (s.http.max_ttl.count() > 0 && s.http.max_ttl < s.ttl)
    r.error(locate(origin, "max_ttl"), child(child(p, "origin"), "max_ttl"),
            "must be >= the policy's ttl (" + format_duration(s.ttl) + ")");
}

// Fills from replicas: only where the upstream is read (not an http origin, not a versioned
// pointer, whose two reads must come from one server), and with a fallback to the primary.
void check_fill_read_from(Reader& r, const YAML::Node& map, const std::string& p,
                          const PolicySettings& s) {
  if (s.read_from == ReadFrom::replica)
    r.error(locate(map, "read_from"), child(p, "read_from"),
            "must be primary or prefer_replica: a fill goes to the primary when no replica has "
            "seen the last invalidation");
  if (s.read_from == ReadFrom::primary) return;
  if (s.origin != OriginKind::redis)
    r.error(locate(map, "read_from"), child(p, "read_from"), "needs origin: redis");
  if (s.versioned)
    r.error(locate(map, "read_from"), child(p, "read_from"),
            "does not apply to a versioned policy (its pointer and value are read from the "
            "primary)");
}

// Rules that involve more than one key of a policy, checked once all of its keys are read.
void check_policy(Reader& r, const YAML::Node& map, const std::string& p, PolicySettings& s) {
  if (!has_key(map, "prefix")) r.error(map, p, "missing required key prefix");
  // A write to an http-backed key would land in Redis where no reader looks, so refuse by default.
  if (!has_key(map, "writes"))
    s.writes = s.origin == OriginKind::http ? WritePolicy::refuse : WritePolicy::passthrough;
  if (s.backoff_min > s.backoff_max)
    r.error(locate(map, "backoff_min"), child(p, "backoff_min"),
            "must be <= backoff_max (" + format_duration(s.backoff_max) + ")");
  if (s.versioned && s.origin == OriginKind::http)
    r.error(locate(map, "versioned"), child(p, "versioned"),
            "needs origin: redis (versions live in the upstream Redis)");
  if (s.shared && s.origin != OriginKind::http)
    r.error(locate(map, "shared"), child(p, "shared"),
            "needs an http origin (with origin: redis the value already lives in the shared "
            "Redis)");
  if (s.shared)
    for (const std::string& c : s.commands)
      if (c != "GET" && c != "MGET")
        r.error(locate(map, "commands"), child(p, "commands"),
                c + " is not cached in fleet mode (shared: true caches GET and MGET)");
  check_fill_read_from(r, map, p, s);
  if (s.origin != OriginKind::http) return;
  check_max_ttl(r, map, p, s);
  for (const std::string& c : s.commands) {
    if (std::find(kStringCommands.begin(), kStringCommands.end(), c) == kStringCommands.end())
      r.error(locate(map, "commands"), child(p, "commands"),
              c + " needs origin: redis; an http origin serves string values");
  }
}

}  // namespace

const Table<PolicySettings>& policy_table() {
  using S = PolicySettings;
  static const Table<S> table{
      text("prefix", &S::prefix, Text::required),
      {"origin", read_origin, show_origin},
      commands("commands", &S::commands, kCacheable, true),
      duration("ttl", &S::ttl, Min::positive),
      number("jitter", &S::jitter, 0.0, 1.0),
      number("beta", &S::beta, 0.0),
      duration("grace", &S::grace, Min::zero),
      duration("stale_if_error", &S::stale_if_error, Min::zero),
      duration("negative_ttl", &S::negative_ttl, Min::zero),
      boolean("shared", &S::shared),
      integer("max_waiters", &S::max_waiters, 0, 10'000'000),
      duration("wait_timeout", &S::wait_timeout, Min::positive),
      choice("on_overflow", &S::on_overflow, kOnOverflow),
      integer("max_origin_concurrency", &S::max_origin_concurrency, 1, 100'000),
      integer("max_origin_queue", &S::max_origin_queue, 0, 10'000'000),
      duration("origin_queue_timeout", &S::origin_queue_timeout, Min::positive),
      choice("on_invalidate", &S::on_invalidate, kOnInvalidate),
      choice("writes", &S::writes, kWrites),
      duration("backoff_min", &S::backoff_min, Min::positive),
      duration("backoff_max", &S::backoff_max, Min::positive),
      integer("breaker_failures", &S::breaker_failures, 1, 1'000'000),
      duration("breaker_open", &S::breaker_open, Min::positive),
      duration("lock_ttl", &S::lock_ttl, Min::zero),
      duration("fetch_delay", &S::fetch_delay, Min::zero),
      {"versioned", read_versioned, show_versioned},
      choice("read_from", &S::read_from, kFillReadFrom),
  };
  return table;
}

void read_policies(Reader& r, const YAML::Node& n, const std::string& p,
                   std::vector<PolicySettings>& out) {
  if (n.IsNull()) return;
  if (!n.IsSequence()) return r.error(n, p, "expected a list of policies (- prefix: ...)");
  std::map<std::string, std::size_t> first_index;  // prefix -> the policy that named it first
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node node = n[i];
    const std::string path = item(p, i);
    if (!node.IsMap()) {
      r.error(node, path, "expected a map with prefix, ttl, ...");
      continue;
    }
    PolicySettings policy;
    read_map(r, node, path, policy_table(), policy);
    check_policy(r, node, path, policy);
    if (!policy.prefix.empty()) {
      const auto [it, inserted] = first_index.emplace(policy.prefix, i);
      if (!inserted)
        r.error(locate(node, "prefix"), child(path, "prefix"),
                "duplicate prefix \"" + policy.prefix + "\" (also " + item(p, it->second) + ")");
    }
    out.push_back(std::move(policy));
  }
}

}  // namespace corral::config::schema
