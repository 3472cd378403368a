// Immutable settings built from the YAML config; every layer reads these and nothing else.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corral::config {

using Duration = std::chrono::milliseconds;

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  bool operator==(const Endpoint&) const = default;
};

// PEM files of one side of a TLS connection.
struct TlsFiles {
  std::string cert;  // certificate (chain)
  std::string key;   // its private key
  std::string ca;    // CA bundle that verifies the peer (empty: the system's, for upstreams)
  bool operator==(const TlsFiles&) const = default;
};

// `upstream.tls`, in force when the address is rediss://.
struct UpstreamTlsSettings {
  bool enabled = false;
  TlsFiles files;           // cert/key: a client certificate, when the server asks for one
  std::string server_name;  // SNI and the name verified; empty: the host of the address
  bool verify = true;
  bool operator==(const UpstreamTlsSettings&) const = default;
};

// `tls:`: a listener for TLS clients, beside (or instead of) the plain one.
struct ClientTlsSettings {
  std::optional<Endpoint> listen;
  TlsFiles files;  // ca set: clients must present a certificate it signed (mTLS)
  std::string min_version = "1.2";
  Duration handshake_timeout{5000};
};

// `upstream.read_from` on a cluster or a Sentinel upstream: where read-only commands go.
enum class ReadFrom { primary, prefer_replica, replica };

// `upstream.sentinel`: a primary that Redis Sentinel watches and fails over.
struct SentinelSettings {
  std::string master;               // the name the Sentinels monitor it under
  std::vector<Endpoint> addresses;  // the Sentinels, asked in turn
  std::string username;             // the Sentinels' own credentials (not the data nodes')
  std::string password;
  bool tls = false;  // rediss:// Sentinel addresses (upstream.tls's files and checks)
  // From the first pre-promotion event until the new primary is in use, commands wait; past
  // this they are answered with an error.
  Duration failover_hold{10000};
  bool operator==(const SentinelSettings&) const = default;
};

struct UpstreamSettings {
  std::vector<Endpoint> servers;  // one for a single Redis; several with `cluster:`; the
                                  // primary a Sentinel named, per connection, with `sentinel:`
  std::optional<SentinelSettings> sentinel;
  UpstreamTlsSettings tls;
  bool cluster = false;
  std::string username;  // ACL user (empty: default user)
  std::string password;
  int database = 0;  // from redis://host:port/N
  Duration connect_timeout{1000};
  Duration command_timeout{2000};
  int connections_per_thread = 1;     // multiplexed pipelined connections per io thread
  std::size_t max_in_flight = 65536;  // commands awaiting a reply on one connection
  Duration reconnect_backoff_min{50};
  Duration reconnect_backoff_max{2000};
  // A tracking (invalidation) link that answers no PING for this long is declared silent:
  // reopened, and what it covers is not served from cache meanwhile.
  Duration tracking_timeout{1000};
  // Redis Cluster and Sentinel (a cluster's replicas get READONLY on their connections).
  ReadFrom read_from = ReadFrom::primary;
  // Cluster or Sentinel: a replica whose replication offset is further behind its primary's than
  // this many bytes gets no reads (0: no limit).
  std::uint64_t max_replica_lag = 0;
  // Cluster or Sentinel with read_from: after a client's acknowledged write, its reads go to the
  // primary until a replica has that write (off: a client may read its own write's older value).
  bool read_your_writes = true;
  // Redis Cluster only (`cluster:`).
  Duration topology_refresh{5000};  // periodic slot map refresh (also on events)
  int max_redirects = 5;            // MOVED/ASK/TRYAGAIN hops per command
  // How long a request for a slot whose primary is failing or unreachable waits for the promoted
  // replica (at least command_timeout): Redis's default cluster-node-timeout (15 s) plus its
  // election and Corral's next slot map refresh.
  Duration failover_hold{20000};
  std::size_t failover_hold_max = 50000;  // requests held at once, process-wide
  // Clients that AUTH as an upstream ACL user: a pool per user and io thread, at most this many
  // per thread, closed once no client has used it for the idle timeout.
  int max_user_pools = 64;
  Duration user_pool_idle_timeout{60000};
  // A reload compares the running settings with the file's: equal means nothing is rebuilt.
  bool operator==(const UpstreamSettings&) const = default;

  // The kind of upstream, as INFO's upstream_mode names it.
  std::string_view kind_name() const {
    return cluster ? "cluster" : (sentinel ? "sentinel" : "standalone");
  }
};

// `routes[].mirror`: a copy of the route's commands sent to a second upstream (a migration's
// target), fire-and-forget; the client's reply never waits for it.
struct MirrorSettings {
  std::string upstream;           // a name of `upstreams` or "default"
  int reads_percent = 0;          // read-only commands mirrored too: this share of them, in %
  std::size_t max_queue = 10000;  // mirrored commands awaiting a reply per io thread
  bool operator==(const MirrorSettings&) const = default;
};

// `routes[]`: keys under `prefix` (a key `{tag}...` by its tag) go to `upstream`.
struct RouteSettings {
  std::string prefix;
  std::string upstream;  // a name of `upstreams` or "default"
  std::optional<MirrorSettings> mirror;
  bool operator==(const RouteSettings&) const = default;
};

// The name `upstream:` goes by in routes, metrics and /readyz.
inline constexpr std::string_view kDefaultUpstreamName = "default";

struct ClientSettings {
  std::string password;        // AUTH required when non-empty
  std::string admin_password;  // CORRAL.* admin commands need AUTH with it when non-empty
  std::size_t max_clients = 10000;
  std::size_t max_request = 512u * 1024 * 1024;  // largest bulk argument
  std::size_t max_inline = 64 * 1024;
  std::size_t max_pipeline = 4096;  // requests awaiting a reply per client
  std::size_t max_output_buffer = 64u * 1024 * 1024;
  // Past max_output_buffer Corral stops reading a client's requests; a client that then takes
  // none of its replies for this long is disconnected (its buffers are freed).
  Duration slow_reader_timeout{10000};
  Duration idle_timeout{0};                 // 0: never
  std::vector<std::string> allow_commands;  // dangerous commands let through (upper case)
  bool refuse_scripts = false;  // EVAL, FCALL, FUNCTION LOAD ... refused (setups without ACLs)
};

struct CacheSettings {
  std::uint64_t max_memory = 256u * 1024 * 1024;
  int shards = 64;
};

// Whether an http origin's Cache-Control and Expires headers set each response's freshness.
enum class CacheControlMode { honor, ignore };

struct HttpOriginSettings {
  std::string url_template;  // {key} and {suffix} are substituted, URL-escaped
  Duration timeout{1000};
  Duration connect_timeout{500};
  std::map<std::string, std::string> headers;
  std::uint64_t max_body = 8u * 1024 * 1024;
  int max_connections = 16;
  int retries = 1;
  CacheControlMode cache_control = CacheControlMode::honor;
  Duration max_ttl{0};  // cap on header freshness; 0 until loaded: then the policy's ttl x 10
};

struct VersionedSettings {
  std::string pointer;  // key holding the current version number
  int keep = 2;
  Duration grace{60000};
  Duration pointer_refresh{1000};
};

enum class OriginKind { redis, http };
enum class OnOverflow { stale, error, passthrough };
enum class OnInvalidate { drop, refresh };
enum class WritePolicy { refuse, passthrough };

struct PolicySettings {
  std::string prefix;
  OriginKind origin = OriginKind::redis;
  HttpOriginSettings http;
  std::vector<std::string> commands{"GET", "MGET"};  // upper case
  Duration ttl{60000};
  double jitter = 0.0;  // [0, 1)
  double beta = 1.0;    // XFetch; 0 turns early refresh off
  Duration grace{0};
  Duration stale_if_error{0};
  Duration negative_ttl{0};  // 0: nil replies are not cached
  bool shared = false;       // fleet mode: value, shadow and lock in Redis
  std::size_t max_waiters = 10000;
  Duration wait_timeout{5000};
  OnOverflow on_overflow = OnOverflow::stale;
  int max_origin_concurrency = 64;
  std::size_t max_origin_queue = 10000;  // fetches waiting for a slot beyond the concurrency
  Duration origin_queue_timeout{5000};   // how long a fetch waits for a slot
  OnInvalidate on_invalidate = OnInvalidate::drop;
  WritePolicy writes = WritePolicy::passthrough;  // http origins default to refuse
  Duration backoff_min{100};
  Duration backoff_max{30000};
  int breaker_failures = 5;     // consecutive failures that open the breaker
  Duration breaker_open{5000};  // time before a half-open probe
  Duration fetch_delay{0};  // added before every origin fetch: simulates a slow origin (benchmarks)
  Duration lock_ttl{0};     // fleet lock; 0: derived from the policy
  std::optional<VersionedSettings> versioned;
  // Where fills read: the primary, or (prefer_replica, a Sentinel upstream with read_from set)
  // a replica that has seen the last invalidation Corral received.
  ReadFrom read_from = ReadFrom::primary;
};

// The proxy slowlog (docs/slowlog.md): requests slower than `threshold`, with their phases.
struct SlowlogSettings {
  bool enabled = true;
  Duration threshold{10};     // Redis's slowlog-log-slower-than default; 0 records every request
  std::size_t max_len = 128;  // entries kept per io thread
};

// The smallest hot_keys.max_bytes: the hot cache's shards each need room for a few replies.
inline constexpr std::uint64_t kMinHotCacheBytes = 64 * 1024;

// Hot-key detection (docs/hot-keys.md): sampled requests counted per key in bounded sketches.
struct HotKeySettings {
  bool detect = true;
  int sample = 16;                  // one keyed request in `sample` (on average) is counted
  std::size_t capacity = 256;       // keys tracked per io thread, for reads and for writes
  std::size_t max_key_bytes = 256;  // longer keys are not tracked
  Duration window{5000};            // rates are over the last whole window
  // Coherent caching of hot keys outside every policy (docs/hot-keys.md#caching).
  bool cache = false;
  double min_rate = 1000;                 // reads per second that make a key hot
  std::size_t max_keys = 256;             // hot keys cached at once (at most capacity)
  std::uint64_t max_bytes = 64ull << 20;  // their cached replies, key and overhead included
};

struct Settings {
  std::string source;  // file the settings came from
  Endpoint listen{"127.0.0.1", 6380};
  bool listen_plain = true;  // false when only tls.listen was configured
  ClientTlsSettings tls;
  std::optional<Endpoint> metrics;  // /metrics, /healthz, /readyz
  int threads = 0;                  // resolved: `auto` becomes the core count
  std::string log_level = "info";
  UpstreamSettings upstream;
  // Named upstreams (each any kind) and the key prefixes routed to them; empty: every command
  // goes to `upstream`.
  std::map<std::string, UpstreamSettings> upstreams;
  std::vector<RouteSettings> routes;
  ClientSettings client;
  CacheSettings cache;
  SlowlogSettings slowlog;
  HotKeySettings hot_keys;
  std::vector<PolicySettings> policies;
  // SIGTERM drain: how long answering what was already read may take before the process exits.
  Duration shutdown_timeout{10000};
};

}  // namespace corral::config
