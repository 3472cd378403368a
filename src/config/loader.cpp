// Loads the YAML config into Settings: the top-level, upstream, client and cache tables, and the
// entry points, which turn every failure (missing file, bad YAML, bad values) into ConfigErrors.
#include "config/loader.hpp"

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "config/schema.hpp"

namespace corral::config {
namespace schema {
namespace {

constexpr std::int64_t kMaxThreads = 1024;
constexpr std::uint64_t kMaxFileBytes = std::uint64_t{16} << 20;  // a config, not a data file

int auto_threads() {
  const unsigned n = std::thread::hardware_concurrency();  // 0 when the platform cannot tell
  return n == 0 ? 1 : static_cast<int>(std::min<unsigned>(n, kMaxThreads));
}

const std::array<Choice<std::string>, 5> kLogLevels{{{"trace", "trace"},
                                                     {"debug", "debug"},
                                                     {"info", "info"},
                                                     {"warn", "warn"},
                                                     {"error", "error"}}};

Parsed<Endpoint> parse_listen(std::string_view text) { return parse_endpoint(text, true); }

void read_metrics(Reader& r, const YAML::Node& n, const std::string& p, Settings& s) {
  const auto v = r.scalar(n, p);
  if (!v) return;
  if (v->empty() || to_lower(*v) == "off") return s.metrics.reset();
  const auto e = parse_endpoint(*v, true);
  if (!e) return r.error(n, p, e.error + " (or off)");
  s.metrics = *e;
}

void read_threads(Reader& r, const YAML::Node& n, const std::string& p, Settings& s) {
  const auto v = r.scalar(n, p);
  if (!v) return;
  if (to_lower(*v) == "auto") return void(s.threads = auto_threads());
  const auto count = parse_integer(*v);
  if (!count) return r.error(n, p, "expected auto or a number of threads");
  if (const auto bad = range_problem(*count, 1, kMaxThreads)) return r.error(n, p, *bad);
  s.threads = static_cast<int>(*count);
}

bool agree(const std::string& a, const std::string& b) { return a.empty() || b.empty() || a == b; }

// Credentials in a URL fill username and password; the explicit keys, read later, override them.
template <class To>
void take_credentials(const RedisUrl& url, To& s) {
  if (!url.username.empty()) s.username = url.username;
  if (!url.password.empty()) s.password = url.password;
}

void read_address(Reader& r, const YAML::Node& n, const std::string& p, UpstreamSettings& s) {
  const auto url = r.parse<RedisUrl>(n, p, parse_redis_url);
  if (!url) return;
  s.servers = {url->endpoint};
  s.tls.enabled = url->tls;
  s.cluster = false;
  s.database = url->database;
  take_credentials(*url, s);
}

void read_cluster(Reader& r, const YAML::Node& n, const std::string& p, UpstreamSettings& s) {
  if (!n.IsSequence() || n.size() == 0)
    return r.error(n, p, "expected a list of seed nodes like [redis://10.0.0.1:7000]");
  std::vector<Endpoint> seeds;
  RedisUrl credentials;  // from whichever seeds carry them; they must agree
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto url = r.parse<RedisUrl>(n[i], item(p, i), parse_redis_url);
    if (!url) continue;
    if (url->database != 0) r.error(n[i], item(p, i), "Redis Cluster has only database 0");
    if (!agree(credentials.username, url->username) || !agree(credentials.password, url->password))
      r.error(n[i], item(p, i), "seed nodes give different credentials");
    if (i > 0 && url->tls != s.tls.enabled)
      r.error(n[i], item(p, i), "seed nodes mix redis:// and rediss://");
    s.tls.enabled = url->tls;
    take_credentials(*url, credentials);
    seeds.push_back(url->endpoint);
  }
  s.servers = std::move(seeds);
  s.cluster = true;
  take_credentials(credentials, s);
}

void read_sentinels(Reader& r, const YAML::Node& n, const std::string& p, SentinelSettings& s) {
  if (!n.IsSequence() || n.size() == 0)
    return r.error(n, p, "expected a list of Sentinels like [redis://10.0.0.1:26379]");
  s.addresses.clear();
  RedisUrl credentials;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto url = r.parse<RedisUrl>(n[i], item(p, i), parse_redis_url);
    if (!url) continue;
    if (url->database != 0) r.error(n[i], item(p, i), "a Sentinel has no database to select");
    if (!agree(credentials.username, url->username) || !agree(credentials.password, url->password))
      r.error(n[i], item(p, i), "Sentinels give different credentials");
    if (i > 0 && url->tls != s.tls)
      r.error(n[i], item(p, i), "Sentinels mix redis:// and rediss://");
    s.tls = url->tls;
    take_credentials(*url, credentials);
    s.addresses.push_back(url->endpoint);
  }
  take_credentials(credentials, s);
}

template <class S>
Field<S> credential(std::string_view key, std::string S::*m, Text kind) {
  Field<S> f = text(key, m, kind);
  // Empty (as ${REDIS_PASSWORD:-} gives when unset) keeps what the URL said.
  f.read = [m](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
    if (auto v = r.scalar(n, p); v && !v->empty()) s.*m = std::move(*v);
  };
  return f;
}

const Table<SentinelSettings>& sentinel_table() {
  using S = SentinelSettings;
  static const Table<S> table{
      text("master", &S::master, Text::required),
      {"addresses", read_sentinels,
       [](const S& s) {
         std::vector<std::string> urls;
         for (const Endpoint& e : s.addresses) urls.push_back(format_redis_url(e, 0, s.tls));
         return flow_list(urls);
       }},
      credential("username", &S::username, Text::plain),
      credential("password", &S::password, Text::secret),
      duration("failover_hold", &S::failover_hold, Min::positive),
  };
  return table;
}

// `sentinel.username` / `sentinel.password` win over credentials in the address URLs whatever
// the keys' order (the table reads them in file order), as upstream.password does over
// upstream.address; empty (an unset ${VAR:-}) keeps the URLs'.
void prefer_explicit_credentials(Reader& r, const YAML::Node& n, const std::string& p,
                                 SentinelSettings& s) {
  for (auto [key, member] : {std::pair{"username", &SentinelSettings::username},
                             std::pair{"password", &SentinelSettings::password}}) {
    if (!has_key(n, key)) continue;
    if (auto v = r.scalar(n[key], child(p, key)); v && !v->empty()) s.*member = std::move(*v);
  }
}

void read_sentinel(Reader& r, const YAML::Node& n, const std::string& p, UpstreamSettings& s) {
  if (!n.IsMap()) return r.error(n, p, "expected a map: {master: NAME, addresses: [...]}");
  SentinelSettings sentinel;
  read_map(r, n, p, sentinel_table(), sentinel);
  prefer_explicit_credentials(r, n, p, sentinel);
  if (!has_key(n, "master")) r.error(n, child(p, "master"), "required: the monitored name");
  if (!has_key(n, "addresses"))
    r.error(n, child(p, "addresses"), "required: the Sentinels, like [redis://10.0.0.1:26379]");
  // Redis deployments with TLS use it on every port; the primary the Sentinels name is reached
  // the way they are.
  s.tls.enabled = sentinel.tls;
  s.cluster = false;
  s.sentinel = std::move(sentinel);
}

// A file the config names: it must be there and readable when the config is loaded; whether it
// holds a usable certificate or key is checked when the TLS context is built (tls/context.hpp).
Field<TlsFiles> pem_file(std::string_view key, std::string TlsFiles::*m) {
  Field<TlsFiles> f = text(key, m);
  f.read = [m](Reader& r, const YAML::Node& n, const std::string& p, TlsFiles& s) {
    auto v = r.scalar(n, p);
    if (!v) return;
    if (v->empty()) {  // as ${CA_FILE:-} gives when unset: no file
      (s.*m).clear();
      return;
    }
    std::ifstream in(*v);
    if (!in) return r.error(n, p, *v + ": cannot read: " + std::strerror(errno));
    s.*m = std::move(*v);
  };
  return f;
}

// TlsFiles' keys sit directly in the tls maps, so each table lists them through `files`.
template <class S>
Field<S> files_field(std::string_view key, std::string TlsFiles::*m) {
  Field<TlsFiles> inner = pem_file(key, m);
  return {key,
          [read = inner.read](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
            read(r, n, p, s.files);
          },
          [show = inner.show](const S& s) { return show(s.files); }};
}

const Table<UpstreamTlsSettings>& upstream_tls_table() {
  using S = UpstreamTlsSettings;
  static const Table<S> table{
      files_field<S>("ca", &TlsFiles::ca),   files_field<S>("cert", &TlsFiles::cert),
      files_field<S>("key", &TlsFiles::key), text("server_name", &S::server_name),
      boolean("verify", &S::verify),
  };
  return table;
}

const std::array<Choice<ReadFrom>, 3> kReadFrom{{{"primary", ReadFrom::primary},
                                                 {"prefer_replica", ReadFrom::prefer_replica},
                                                 {"replica", ReadFrom::replica}}};

const std::array<Choice<std::string>, 2> kTlsVersions{{{"1.2", "1.2"}, {"1.3", "1.3"}}};

const Table<ClientTlsSettings>& client_tls_table() {
  using S = ClientTlsSettings;
  static const Table<S> table{
      {"listen",
       [](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
         if (const auto e = r.parse<Endpoint>(n, p, parse_listen)) s.listen = *e;
       },
       [](const S& s) { return s.listen ? text_node(format_endpoint(*s.listen)) : omitted(); }},
      files_field<S>("cert", &TlsFiles::cert),
      files_field<S>("key", &TlsFiles::key),
      files_field<S>("ca", &TlsFiles::ca),
      choice("min_version", &S::min_version, kTlsVersions),
      duration("handshake_timeout", &S::handshake_timeout, Min::positive),
  };
  return table;
}

void check_client_tls(Reader& r, const YAML::Node& map, const std::string& p,
                      ClientTlsSettings& s) {
  if (!s.listen) return r.error(map, child(p, "listen"), "required: the TLS listener's address");
  if (!has_key(map, "cert")) r.error(map, child(p, "cert"), "required with tls.listen");
  if (!has_key(map, "key")) r.error(map, child(p, "key"), "required with tls.listen");
}

// A key that only a cluster upstream reads: describe() leaves it out for a single Redis, whose
// config would refuse it (check_upstream).
Field<UpstreamSettings> cluster_only(Field<UpstreamSettings> f) {
  f.show = [show = std::move(f.show)](const UpstreamSettings& s) {
    return s.cluster ? show(s) : omitted();
  };
  return f;
}

// A key that a cluster or a Sentinel upstream reads (one with replicas).
Field<UpstreamSettings> replicated_only(Field<UpstreamSettings> f) {
  f.show = [show = std::move(f.show)](const UpstreamSettings& s) {
    return s.cluster || s.sentinel ? show(s) : omitted();
  };
  return f;
}

// A size whose 0 means "not set": left out then (0 itself is refused when written).
Field<UpstreamSettings> unless_zero(Field<UpstreamSettings> f, std::uint64_t UpstreamSettings::*m) {
  f.show = [show = std::move(f.show), m](const UpstreamSettings& s) {
    return s.*m != 0 ? show(s) : omitted();
  };
  return f;
}

}  // namespace

const Table<UpstreamSettings>& upstream_table() {
  using S = UpstreamSettings;
  static const Table<S> table{
      {"address", read_address,
       [](const S& s) {
         if (s.cluster || s.sentinel || s.servers.empty()) return omitted();
         return text_node(format_redis_url(s.servers.front(), s.database, s.tls.enabled));
       }},
      {"cluster", read_cluster,
       [](const S& s) {
         if (!s.cluster) return omitted();
         std::vector<std::string> urls;
         for (const Endpoint& e : s.servers) urls.push_back(format_redis_url(e, 0, s.tls.enabled));
         return flow_list(urls);
       }},
      {"sentinel", read_sentinel,
       [](const S& s) { return s.sentinel ? show_map(sentinel_table(), *s.sentinel) : omitted(); }},
      credential("username", &S::username, Text::plain),
      credential("password", &S::password, Text::secret),
      duration("connect_timeout", &S::connect_timeout, Min::positive),
      duration("command_timeout", &S::command_timeout, Min::positive),
      integer("connections_per_thread", &S::connections_per_thread, 1, 64),
      integer("max_in_flight", &S::max_in_flight, 1, 10'000'000),
      duration("reconnect_backoff_min", &S::reconnect_backoff_min, Min::positive),
      duration("reconnect_backoff_max", &S::reconnect_backoff_max, Min::positive),
      duration("tracking_timeout", &S::tracking_timeout, Min::positive),
      integer("max_user_pools", &S::max_user_pools, 1, 4096),
      duration("user_pool_idle_timeout", &S::user_pool_idle_timeout, Min::positive),
      section("tls", &S::tls, upstream_tls_table),
      replicated_only(choice("read_from", &S::read_from, kReadFrom)),
      replicated_only(
          unless_zero(size("max_replica_lag", &S::max_replica_lag), &S::max_replica_lag)),
      replicated_only(boolean("read_your_writes", &S::read_your_writes)),
      cluster_only(duration("topology_refresh", &S::topology_refresh, Min::positive)),
      cluster_only(integer("max_redirects", &S::max_redirects, 0, 100)),
      cluster_only(duration("failover_hold", &S::failover_hold, Min::zero)),
      cluster_only(integer("failover_hold_max", &S::failover_hold_max, 1, 10'000'000)),
  };
  return table;
}

void check_upstream(Reader& r, const YAML::Node& map, const std::string& p, UpstreamSettings& s) {
  // The kind is one key: the second one written is the mistake.
  int kinds = 0;
  for (std::string_view key : {"address", "cluster", "sentinel"}) {
    if (has_key(map, key) && ++kinds == 2)
      r.error(locate(map, key), child(p, key), "use one of address, cluster or sentinel");
  }
  if (s.reconnect_backoff_min > s.reconnect_backoff_max)
    r.error(locate(map, "reconnect_backoff_min"), child(p, "reconnect_backoff_min"),
            "must be <= reconnect_backoff_max (" + format_duration(s.reconnect_backoff_max) + ")");
  // The cluster keys mean nothing to a single Redis: written there, they are a mistake.
  if (!s.cluster && !s.sentinel && has_key(map, "read_from"))
    r.error(locate(map, "read_from"), child(p, "read_from"),
            "only applies with upstream.cluster or upstream.sentinel");
  for (std::string_view key : {"max_replica_lag", "read_your_writes"}) {
    if (!s.cluster && !s.sentinel && has_key(map, key))
      r.error(locate(map, key), child(p, key),
              "only applies with upstream.cluster or upstream.sentinel");
  }
  if (!s.cluster) {
    for (std::string_view key :
         {"topology_refresh", "max_redirects", "failover_hold", "failover_hold_max"}) {
      if (has_key(map, key))
        r.error(locate(map, key), child(p, key), "only applies with upstream.cluster");
    }
  }
}

namespace {

const Table<ClientSettings>& client_table() {
  using S = ClientSettings;
  static const Table<S> table{
      text("password", &S::password, Text::secret),
      text("admin_password", &S::admin_password, Text::secret),
      integer("max_clients", &S::max_clients, 1, 10'000'000),
      size("max_request", &S::max_request),
      size("max_inline", &S::max_inline),
      integer("max_pipeline", &S::max_pipeline, 1, 10'000'000),
      size("max_output_buffer", &S::max_output_buffer),
      duration("slow_reader_timeout", &S::slow_reader_timeout, Min::positive),
      duration("idle_timeout", &S::idle_timeout, Min::zero),
      commands("allow_commands", &S::allow_commands, {}, false),
      boolean("refuse_scripts", &S::refuse_scripts),
  };
  return table;
}

const Table<CacheSettings>& cache_table() {
  using S = CacheSettings;
  static const Table<S> table{
      size("max_memory", &S::max_memory),
      integer("shards", &S::shards, 1, 4096),
  };
  return table;
}

const Table<SlowlogSettings>& slowlog_table() {
  using S = SlowlogSettings;
  static const Table<S> table{
      boolean("enabled", &S::enabled),
      duration("threshold", &S::threshold, Min::zero),
      integer("max_len", &S::max_len, 1, 100'000),
  };
  return table;
}

const Table<HotKeySettings>& hot_keys_table() {
  using S = HotKeySettings;
  static const Table<S> table{
      boolean("detect", &S::detect),
      integer("sample", &S::sample, 1, 1'000'000),
      integer("capacity", &S::capacity, 8, 100'000),
      integer("max_key_bytes", &S::max_key_bytes, 1, 65'536),
      duration("window", &S::window, Min::positive),
      boolean("cache", &S::cache),
      number("min_rate", &S::min_rate, 0.001),
      integer("max_keys", &S::max_keys, 1, 100'000),
      size("max_bytes", &S::max_bytes),
  };
  return table;
}

void check_hot_keys(Reader& r, const YAML::Node& map, const std::string& p, HotKeySettings& s) {
  if (!s.cache) return;
  if (!s.detect)
    r.error(locate(map, "cache"), child(p, "cache"),
            "needs hot_keys.detect: true (hot keys are "
            "found by detection)");
  // The merged report keeps `capacity` keys: more could never be named hot.
  if (s.max_keys > s.capacity)
    r.error(has_key(map, "max_keys") ? locate(map, "max_keys") : map, child(p, "max_keys"),
            "must be <= hot_keys.capacity (" + std::to_string(s.capacity) +
                "): only that many keys are reported per window");
  if (s.max_bytes < kMinHotCacheBytes)
    r.error(locate(map, "max_bytes"), child(p, "max_bytes"),
            "must be >= " + format_size(kMinHotCacheBytes));
}

// A policy's read_from reads the replicas the upstream follows: a Sentinel or cluster upstream
// whose replicas' offsets are polled (upstream.read_from set).
void check_fill_sources(Reader& r, const YAML::Node& root, const Settings& s) {
  if (!root.IsMap() || !has_key(root, "policies")) return;
  const YAML::Node policies = root["policies"];
  if (!policies.IsSequence()) return;
  for (std::size_t i = 0; i < s.policies.size() && i < policies.size(); ++i) {
    if (s.policies[i].read_from != ReadFrom::prefer_replica) continue;
    // The upstream the policy's keys are routed to.
    const RouteSettings* route = route_of_prefix(s, s.policies[i].prefix);
    const auto named = route ? s.upstreams.find(route->upstream) : s.upstreams.end();
    const UpstreamSettings& upstream = named != s.upstreams.end() ? named->second : s.upstream;
    const bool replicas_polled =
        (upstream.sentinel || upstream.cluster) && upstream.read_from != ReadFrom::primary;
    if (replicas_polled) continue;
    r.error(locate(policies[i], "read_from"), child(item("policies", i), "read_from"),
            "prefer_replica needs upstream.sentinel or upstream.cluster with upstream.read_from "
            "set (the replicas whose offsets Corral polls)");
  }
}

// Defaults that depend on the machine or on other keys, applied after reading.
void finalize(Settings& s) {
  if (s.threads == 0) s.threads = auto_threads();
  // A Sentinel upstream has no server of its own until the Sentinels name the primary.
  if (s.upstream.servers.empty() && !s.upstream.sentinel) {
    s.upstream.servers = {Endpoint{"127.0.0.1", 6379}};
  }
  for (auto& [name, upstream] : s.upstreams) {
    if (upstream.servers.empty() && !upstream.sentinel) {
      upstream.servers = {Endpoint{"127.0.0.1", 6379}};
    }
  }
}

LoadResult load(const std::string& text, const std::string& source) {
  Reader r(source, process_env());
  YAML::Node root;
  try {
    // LoadAll, not Load: Load stops after the first document and would silently ignore whatever
    // follows it (a second document, or keys after a flow mapping `{...}`).
    const auto documents = YAML::LoadAll(text);
    if (documents.size() > 1) {
      const auto line = documents[1].Mark().line;
      r.error_at_line(line, "",
                      "the file holds " + std::to_string(documents.size()) +
                          " YAML documents; Corral reads exactly one (the second starts here)");
      return ConfigErrors{r.messages()};
    }
    if (!documents.empty()) root = documents.front();
  } catch (const YAML::Exception& e) {
    r.error_at_line(e.mark.line, "", "invalid YAML: " + e.msg);
    return ConfigErrors{r.messages()};
  }
  Settings settings;
  settings.source = source;
  read_map(r, root, "", settings_table(), settings);
  // A TLS listener alone replaces the plain one; both run when both are written.
  settings.listen_plain = !settings.tls.listen || (root.IsMap() && has_key(root, "listen"));
  check_routes(r, root, settings);
  check_fill_sources(r, root, settings);
  finalize(settings);
  if (!r.ok()) return ConfigErrors{r.messages()};
  return settings;
}

}  // namespace

const Table<Settings>& settings_table() {
  using S = Settings;
  static const Table<S> table{
      {"listen",
       [](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
         if (const auto e = r.parse<Endpoint>(n, p, parse_listen)) s.listen = *e;
       },
       [](const S& s) { return text_node(format_endpoint(s.listen)); }},
      {"metrics", read_metrics,
       [](const S& s) { return text_node(s.metrics ? format_endpoint(*s.metrics) : "off"); }},
      {"threads", read_threads, [](const S& s) { return text_node(std::to_string(s.threads)); }},
      choice("log_level", &S::log_level, kLogLevels),
      {"tls",
       [](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
         read_map(r, n, p, client_tls_table(), s.tls);
         if (n.IsMap()) check_client_tls(r, n, p, s.tls);
       },
       [](const S& s) { return s.tls.listen ? show_map(client_tls_table(), s.tls) : omitted(); }},
      section("upstream", &S::upstream, upstream_table, check_upstream),
      {"upstreams", read_upstreams, show_upstreams},
      {"routes", read_routes, show_routes},
      section("client", &S::client, client_table),
      section("cache", &S::cache, cache_table),
      duration("shutdown_timeout", &S::shutdown_timeout, Min::zero),
      section("slowlog", &S::slowlog, slowlog_table),
      section("hot_keys", &S::hot_keys, hot_keys_table, check_hot_keys),
      {"policies",
       [](Reader& r, const YAML::Node& n, const std::string& p, S& s) {
         read_policies(r, n, p, s.policies);
       },
       [](const S& s) {
         YAML::Node list(YAML::NodeType::Sequence);
         for (const PolicySettings& p : s.policies) list.push_back(show_map(policy_table(), p));
         return list;
       }},
  };
  return table;
}

}  // namespace schema

LoadResult load_settings_text(const std::string& yaml_text, const std::string& source_name) {
  // The contract is "never throws": anything unexpected still becomes a reported error.
  try {
    return schema::load(yaml_text, source_name);
  } catch (const std::exception& e) {
    return ConfigErrors{{source_name + ": internal error while loading: " + e.what()}};
  } catch (...) {
    return ConfigErrors{{source_name + ": internal error while loading"}};
  }
}

LoadResult load_settings_file(const std::string& path) {
  try {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      return ConfigErrors{{path + ": cannot read: it is a directory"}};
    std::ifstream in(path, std::ios::binary);
    if (!in) return ConfigErrors{{path + ": cannot read: " + std::strerror(errno)}};
    const auto bytes = std::filesystem::file_size(path, ec);
    if (!ec && bytes > schema::kMaxFileBytes)
      return ConfigErrors{{path + ": cannot read: too large"}};
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return ConfigErrors{{path + ": cannot read: " + std::strerror(errno)}};
    return load_settings_text(text, path);
  } catch (const std::exception& e) {
    return ConfigErrors{{path + ": cannot read: " + e.what()}};
  }
}

}  // namespace corral::config
