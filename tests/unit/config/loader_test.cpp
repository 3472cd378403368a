// Tests that valid configs load into the expected Settings: defaults, every section, env expansion,
// and the shipped config/corral.yaml and config/example.yaml.
#include <cstdlib>

#include "config/loader.hpp"
#include "test_support.hpp"

using namespace corral::config;
using namespace corral::config::test;
using namespace std::chrono_literals;

TEST_CASE("an empty config gives the defaults", "[config][loader]") {
  const Settings s = must_load("");
  CHECK(s.source == "t.yaml");
  CHECK(s.listen.host == "127.0.0.1");
  CHECK(s.listen.port == 6380);
  CHECK_FALSE(s.metrics);
  CHECK(s.threads >= 1);
  CHECK(s.log_level == "info");
  REQUIRE(s.upstream.servers.size() == 1);
  CHECK(s.upstream.servers[0].host == "127.0.0.1");
  CHECK(s.upstream.servers[0].port == 6379);
  CHECK_FALSE(s.upstream.cluster);
  CHECK(s.upstream.connect_timeout == 1s);
  CHECK(s.client.max_request == 512u * 1024 * 1024);
  CHECK(s.client.allow_commands.empty());
  CHECK(s.cache.max_memory == 256u * 1024 * 1024);
  CHECK(s.policies.empty());
  // Empty sections and an empty policy list read as "all defaults" too.
  CHECK(must_load("upstream:\nclient:\ncache:\npolicies:\n").upstream.servers.size() == 1);
}

// Fleet copies, locks and version pointers are routed by their key's slot on a cluster, so these
// policies load there like on one server (they were refused before that routing existed).
TEST_CASE("shared and versioned policies load with upstream.cluster", "[config][loader]") {
  const Settings s = must_load(yaml(R"(
upstream:
  cluster: [redis://127.0.0.1:7000]
policies:
  - prefix: "feat:"
    origin: { http: "http://127.0.0.1:8080/{key}" }
    shared: true
  - prefix: "model:"
    origin: redis
    versioned: { pointer: "model:current" }
)"));
  CHECK(s.upstream.cluster);
  REQUIRE(s.policies.size() == 2);
  CHECK(s.policies[0].shared);
  CHECK(s.policies[1].versioned);
}

TEST_CASE("top-level values", "[config][loader]") {
  const Settings s = must_load(yaml(R"(
listen: "[::1]:0"
metrics: 0.0.0.0:9121
threads: 3
log_level: WARN
)"));
  CHECK(s.listen.host == "::1");
  CHECK(s.listen.port == 0);
  REQUIRE(s.metrics);
  CHECK(s.metrics->port == 9121);
  CHECK(s.threads == 3);
  CHECK(s.log_level == "warn");
  CHECK(must_load("threads: auto").threads >= 1);
  CHECK_FALSE(must_load("metrics: off").metrics);
}

TEST_CASE("upstream: address, credentials, cluster", "[config][loader]") {
  Settings s = must_load(yaml(R"(
upstream:
  address: redis://alice:secret@cache.local:7000/2
  connect_timeout: 300ms
  command_timeout: 1m
  connections_per_thread: 4
  max_in_flight: 1000
  reconnect_backoff_min: 10ms
  reconnect_backoff_max: 10ms
)"));
  CHECK(s.upstream.servers[0].host == "cache.local");
  CHECK(s.upstream.servers[0].port == 7000);
  CHECK(s.upstream.database == 2);
  CHECK(s.upstream.username == "alice");
  CHECK(s.upstream.password == "secret");
  CHECK(s.upstream.connect_timeout == 300ms);
  CHECK(s.upstream.command_timeout == 1min);
  CHECK(s.upstream.connections_per_thread == 4);
  CHECK(s.upstream.max_in_flight == 1000);
  CHECK(s.upstream.reconnect_backoff_min == 10ms);

  // Explicit keys win over the URL, whatever their order in the file; empty ones leave it alone.
  s = must_load(yaml(R"(
upstream:
  password: override
  username: ""
  address: redis://alice:secret@h:1
)"));
  CHECK(s.upstream.password == "override");
  CHECK(s.upstream.username == "alice");

  s = must_load(yaml(R"(
upstream:
  cluster: [redis://10.0.0.1:7000, "redis://:pw@10.0.0.2"]
)"));
  CHECK(s.upstream.cluster);
  REQUIRE(s.upstream.servers.size() == 2);
  CHECK(s.upstream.servers[1].port == 6379);
  CHECK(s.upstream.read_from == ReadFrom::primary);
  CHECK(s.upstream.topology_refresh == 5s);
  CHECK(s.upstream.max_redirects == 5);
  CHECK(s.upstream.failover_hold == 20s);
  CHECK(s.upstream.failover_hold_max == 50000);

  s = must_load(yaml(R"(
upstream:
  cluster: [redis://10.0.0.1:7000]
  read_from: prefer_replica
  topology_refresh: 2s
  max_redirects: 0
  failover_hold: 0s
  failover_hold_max: 10
)"));
  CHECK(s.upstream.failover_hold == 0s);
  CHECK(s.upstream.failover_hold_max == 10);
  CHECK(s.upstream.read_from == ReadFrom::prefer_replica);
  CHECK(s.upstream.topology_refresh == 2s);
  CHECK(s.upstream.max_redirects == 0);
}

TEST_CASE("upstream: sentinel", "[config][loader]") {
  const Settings s = must_load(yaml(R"(
upstream:
  sentinel:
    master: mymaster
    addresses: [redis://:spw@s1:26379, redis://s2:26380]
    failover_hold: 3s
  password: datapw
)"));
  REQUIRE(s.upstream.sentinel);
  const auto& sentinel = *s.upstream.sentinel;
  CHECK(sentinel.master == "mymaster");
  REQUIRE(sentinel.addresses.size() == 2);
  CHECK(sentinel.addresses[0].host == "s1");
  CHECK(sentinel.addresses[1].port == 26380);
  CHECK(sentinel.password == "spw");  // the Sentinels' own, from the URL
  CHECK(s.upstream.password == "datapw");
  CHECK(sentinel.failover_hold == 3s);
  CHECK_FALSE(sentinel.tls);
  CHECK_FALSE(s.upstream.cluster);

  // An explicit sentinel.password wins over the URLs', before or after them in the file.
  for (const char* text : {"upstream: {sentinel: {master: m, password: own, "
                           "addresses: [redis://:url@s]}}",
                           "upstream: {sentinel: {master: m, addresses: [redis://:url@s], "
                           "password: own}}"}) {
    CHECK(must_load(text).upstream.sentinel->password == "own");
  }
  CHECK(must_load("upstream: {sentinel: {master: m, addresses: [redis://:url@s], password: ''}}")
            .upstream.sentinel->password == "url");

  const Settings defaults = must_load("upstream: {sentinel: {master: m, addresses: [redis://s]}}");
  CHECK(defaults.upstream.sentinel->failover_hold == 10s);
  CHECK(defaults.upstream.sentinel->addresses[0].port == 6379);
}

TEST_CASE("client and cache sections", "[config][loader]") {
  const Settings s = must_load(yaml(R"(
client:
  password: pw
  admin_password: admin
  max_clients: 5
  max_request: 1mb
  max_inline: 4KB
  max_pipeline: 16
  max_output_buffer: 1gb
  idle_timeout: 5m
  allow_commands: [flushdb, Config]
cache:
  max_memory: 1024
  shards: 8
)"));
  CHECK(s.client.password == "pw");
  CHECK(s.client.admin_password == "admin");
  CHECK(s.client.max_clients == 5);
  CHECK(s.client.max_request == 1024 * 1024);
  CHECK(s.client.max_inline == 4096);
  CHECK(s.client.max_pipeline == 16);
  CHECK(s.client.max_output_buffer == 1u << 30);
  CHECK(s.client.idle_timeout == 5min);
  CHECK(s.client.allow_commands == std::vector<std::string>{"FLUSHDB", "CONFIG"});
  CHECK(s.cache.max_memory == 1024);
  CHECK(s.cache.shards == 8);
}

TEST_CASE("a redis policy with every key", "[config][loader]") {
  const Settings s = must_load(yaml(R"(
policies:
  - prefix: "product:"
    origin: redis
    commands: [get, HGETALL, GET, zrange]
    ttl: 60s
    jitter: 0.25
    beta: 2
    grace: 10s
    stale_if_error: 1h
    negative_ttl: 30s
    max_waiters: 0
    wait_timeout: 2s
    on_overflow: passthrough
    max_origin_concurrency: 8
    max_origin_queue: 500
    origin_queue_timeout: 750ms
    on_invalidate: refresh
    backoff_min: 1s
    backoff_max: 1s
    breaker_failures: 3
    breaker_open: 10s
    lock_ttl: 3s
    versioned: { pointer: "product:ptr", keep: 3, grace: 0, pointer_refresh: 250ms }
)"));
  REQUIRE(s.policies.size() == 1);
  const PolicySettings& p = s.policies[0];
  CHECK(p.prefix == "product:");
  CHECK(p.origin == OriginKind::redis);
  CHECK(p.commands == std::vector<std::string>{"GET", "HGETALL", "ZRANGE"});
  CHECK(p.ttl == 60s);
  CHECK(p.jitter == 0.25);
  CHECK(p.beta == 2.0);
  CHECK(p.grace == 10s);
  CHECK(p.stale_if_error == 1h);
  CHECK(p.negative_ttl == 30s);
  CHECK_FALSE(p.shared);
  CHECK(p.max_waiters == 0);
  CHECK(p.wait_timeout == 2s);
  CHECK(p.on_overflow == OnOverflow::passthrough);
  CHECK(p.max_origin_concurrency == 8);
  CHECK(p.max_origin_queue == 500);
  CHECK(p.origin_queue_timeout == 750ms);
  CHECK(p.on_invalidate == OnInvalidate::refresh);
  CHECK(p.writes == WritePolicy::passthrough);
  CHECK(p.backoff_min == 1s);
  CHECK(p.breaker_failures == 3);
  CHECK(p.breaker_open == 10s);
  CHECK(p.lock_ttl == 3s);
  REQUIRE(p.versioned);
  CHECK(p.versioned->pointer == "product:ptr");
  CHECK(p.versioned->keep == 3);
  CHECK(p.versioned->grace == 0s);
  CHECK(p.versioned->pointer_refresh == 250ms);
}

TEST_CASE("an http policy, and the writes default per origin", "[config][loader]") {
  const Settings s = must_load(yaml(R"(
policies:
  - prefix: "feat:"
    origin:
      http: http://127.0.0.1:8080/features/{suffix}?full={key}
      timeout: 250ms
      connect_timeout: 100ms
      headers: { Authorization: "Bearer t", X-Trace: "1" }
      max_body: 1mb
      max_connections: 4
      retries: 0
  - prefix: "feat:rw:"
    origin: { http: "http://h/{key}" }
    writes: passthrough
  - prefix: "plain:"
)"));
  REQUIRE(s.policies.size() == 3);
  const PolicySettings& p = s.policies[0];
  CHECK(p.origin == OriginKind::http);
  CHECK(p.http.url_template == "http://127.0.0.1:8080/features/{suffix}?full={key}");
  CHECK(p.http.timeout == 250ms);
  CHECK(p.http.connect_timeout == 100ms);
  CHECK(p.http.headers.at("Authorization") == "Bearer t");
  CHECK(p.http.headers.at("X-Trace") == "1");
  CHECK(p.http.max_body == 1024 * 1024);
  CHECK(p.http.max_connections == 4);
  CHECK(p.http.retries == 0);
  CHECK(p.commands == std::vector<std::string>{"GET", "MGET"});
  CHECK(p.writes == WritePolicy::refuse);
  CHECK(s.policies[1].writes == WritePolicy::passthrough);
  CHECK(s.policies[2].origin == OriginKind::redis);
  CHECK(s.policies[2].writes == WritePolicy::passthrough);
}

TEST_CASE("http caching: honored by default, max_ttl ten times the ttl", "[config][loader]") {
  const Settings s = must_load(yaml(R"(
policies:
  - prefix: "a:"
    ttl: 30s
    origin: { http: "http://h/{key}" }
  - prefix: "b:"
    ttl: 30s
    origin: { http: "http://h/{key}", cache_control: ignore, max_ttl: 1h }
)"));
  REQUIRE(s.policies.size() == 2);
  CHECK(s.policies[0].http.cache_control == CacheControlMode::honor);
  CHECK(s.policies[0].http.max_ttl == std::chrono::seconds(300));
  CHECK(s.policies[1].http.cache_control == CacheControlMode::ignore);
  CHECK(s.policies[1].http.max_ttl == std::chrono::hours(1));
  CHECK_FALSE(s.policies[1].versioned);
}

TEST_CASE("${ENV} is expanded before the typed value is parsed", "[config][loader]") {
  ::setenv("CORRAL_TEST_PW", "s3cret", 1);
  ::setenv("CORRAL_TEST_TTL", "90s", 1);
  ::setenv("CORRAL_TEST_PORT", "7001", 1);
  ::unsetenv("CORRAL_TEST_UNSET");
  const Settings s = must_load(yaml(R"(
listen: 127.0.0.1:${CORRAL_TEST_PORT}
upstream:
  password: ${CORRAL_TEST_PW}
client:
  password: ${CORRAL_TEST_UNSET:-fallback}
policies:
  - prefix: "p:"
    ttl: ${CORRAL_TEST_TTL}
    grace: ${CORRAL_TEST_UNSET:-5s}
)"));
  CHECK(s.listen.port == 7001);
  CHECK(s.upstream.password == "s3cret");
  CHECK(s.client.password == "fallback");
  CHECK(s.policies[0].ttl == 90s);
  CHECK(s.policies[0].grace == 5s);

  ::setenv("CORRAL_TEST_TTL", "soon", 1);
  CHECK(errors_of("policies:\n  - prefix: a\n    ttl: ${CORRAL_TEST_TTL}\n") ==
        std::vector<std::string>{
            "t.yaml:3: policies[0].ttl: expected a duration like 300ms, 10s, 5m"});
  CHECK(
      errors_of("upstream:\n  password: ${CORRAL_TEST_UNSET}\n") ==
      std::vector<std::string>{"t.yaml:2: upstream.password: environment variable "
                               "CORRAL_TEST_UNSET is not set (write ${CORRAL_TEST_UNSET:-default} "
                               "to give a default)"});
  ::unsetenv("CORRAL_TEST_PW");
  ::unsetenv("CORRAL_TEST_TTL");
  ::unsetenv("CORRAL_TEST_PORT");
}

TEST_CASE("the shipped configs load", "[config][loader]") {
  for (const char* name : {"corral.yaml", "example.yaml"}) {
    const std::string path = std::string(CORRAL_SOURCE_DIR) + "/config/" + name;
    INFO(path);
    const LoadResult result = load_settings_file(path);
    if (const auto* errors = std::get_if<ConfigErrors>(&result)) {
      for (const std::string& m : errors->messages) UNSCOPED_INFO(m);
    }
    REQUIRE(std::holds_alternative<Settings>(result));
    const Settings& s = std::get<Settings>(result);
    CHECK(s.source == path);
    CHECK(s.listen.host == "127.0.0.1");
    CHECK(s.listen.port == 6380);
    REQUIRE(s.metrics);
    CHECK(s.metrics->host == "127.0.0.1");
    CHECK_FALSE(s.policies.empty());
  }
}

TEST_CASE("example.yaml sets every policy feature", "[config][loader]") {
  const LoadResult result =
      load_settings_file(std::string(CORRAL_SOURCE_DIR) + "/config/example.yaml");
  REQUIRE(std::holds_alternative<Settings>(result));
  const Settings& s = std::get<Settings>(result);
  REQUIRE(s.policies.size() == 3);
  CHECK(s.policies[0].origin == OriginKind::http);
  CHECK(s.policies[0].http.url_template == "http://127.0.0.1:8080/v1/features/{suffix}");
  CHECK(s.policies[0].http.headers.count("Authorization") == 1);
  CHECK(s.policies[0].shared);
  CHECK(s.policies[2].versioned);
}

TEST_CASE("allow_commands names a subcommand as README writes it or as COMMAND does",
          "[config][loader]") {
  const Settings s = must_load(
      "client:\n  allow_commands: [\"CONFIG GET\", \"config|set\", \"  client   kill \", "
      "SCRIPT]\n");
  CHECK(s.client.allow_commands ==
        std::vector<std::string>{"CONFIG|GET", "CONFIG|SET", "CLIENT|KILL", "SCRIPT"});
}
