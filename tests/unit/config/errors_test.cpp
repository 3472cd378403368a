// Tests that every kind of bad config is reported as "FILE:LINE: path: problem", that unknown keys
// are caught at every level, that all errors of a file are collected, and that nothing throws.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/loader.hpp"
#include "test_support.hpp"

using namespace corral::config;
using namespace corral::config::test;

namespace {

struct Case {
  const char* yaml;     // one error; line 1 is the first line
  const char* message;  // the exact message
};

void check_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    INFO(c.yaml);
    CHECK(errors_of(yaml(c.yaml)) == std::vector<std::string>{c.message});
  }
}

}  // namespace

TEST_CASE("type and range errors at the top level and in sections", "[config][errors]") {
  check_cases({
      {"listen: nowhere", "t.yaml:1: listen: expected host:port like 127.0.0.1:6380"},
      {"listen: 127.0.0.1:70000", "t.yaml:1: listen: port must be in 0..65535"},
      {"listen: [a, b]", "t.yaml:1: listen: expected a single value, found a list"},
      {"metrics: 1.2.3.4", "t.yaml:1: metrics: expected host:port like 127.0.0.1:6380 (or off)"},
      {"threads: 0", "t.yaml:1: threads: must be > 0"},
      {"threads: 5000", "t.yaml:1: threads: must be <= 1024"},
      {"threads: many", "t.yaml:1: threads: expected auto or a number of threads"},
      {"log_level: loud", "t.yaml:1: log_level: expected one of: trace, debug, info, warn, error"},
      {"upstream: 5", "t.yaml:1: upstream: expected a map of settings, found a single value"},
      {"\nupstream:\n  address: http://h:1",
       "t.yaml:2: upstream.address: expected redis://[user:pass@]host:port[/db] (or rediss:// for "
       "TLS)"},
      {"\nupstream:\n  address: redis://h:1\n  cluster: [redis://h:2]",
       "t.yaml:3: upstream.cluster: use one of address, cluster or sentinel"},
      {"\nupstream:\n  address: redis://h:1\n  sentinel: {master: m, addresses: [redis://s:1]}",
       "t.yaml:3: upstream.sentinel: use one of address, cluster or sentinel"},
      {"\nupstream:\n  sentinel: {addresses: [redis://s:1]}",
       "t.yaml:2: upstream.sentinel.master: required: the monitored name"},
      {"\nupstream:\n  sentinel: {master: m}",
       "t.yaml:2: upstream.sentinel.addresses: required: the Sentinels, like "
       "[redis://10.0.0.1:26379]"},
      {"\nupstream:\n  sentinel: {master: m, addresses: []}",
       "t.yaml:2: upstream.sentinel.addresses: expected a list of Sentinels like "
       "[redis://10.0.0.1:26379]"},
      {"\nupstream:\n  sentinel: {master: m, addresses: [redis://s:1/3]}",
       "t.yaml:2: upstream.sentinel.addresses[0]: a Sentinel has no database to select"},
      {"\nupstream:\n  sentinel: {master: m, addresses: [redis://s:1, rediss://t:1]}",
       "t.yaml:2: upstream.sentinel.addresses[1]: Sentinels mix redis:// and rediss://"},
      {"\nupstream:\n  sentinel: {master: m, addresses: [redis://s:1], failover_hold: 0s}",
       "t.yaml:2: upstream.sentinel.failover_hold: must be > 0"},
      {"\nupstream:\n  sentinel: [redis://s:1]",
       "t.yaml:2: upstream.sentinel: expected a map: {master: NAME, addresses: [...]}"},
      {"\nupstream:\n  sentinel: {master: m, addresses: [redis://s:1]}\n  max_redirects: 3",
       "t.yaml:3: upstream.max_redirects: only applies with upstream.cluster"},
      {"\nupstream:\n  cluster: [redis://a:1, redis://b:1/2]",
       "t.yaml:2: upstream.cluster[1]: Redis Cluster has only database 0"},
      {"\nupstream:\n  cluster: [redis://x:y@a:1, redis://b:1, redis://x:z@c:1]",
       "t.yaml:2: upstream.cluster[2]: seed nodes give different credentials"},
      {"\nupstream:\n  address: redis://h:1\n  max_redirects: 3",
       "t.yaml:3: upstream.max_redirects: only applies with upstream.cluster"},
      {"\nupstream:\n  address: redis://h:1\n  read_from: replica",
       "t.yaml:3: upstream.read_from: only applies with upstream.cluster or upstream.sentinel"},
      {"\nupstream:\n  address: redis://h:1\n  max_replica_lag: 1mb",
       "t.yaml:3: upstream.max_replica_lag: only applies with upstream.cluster or "
       "upstream.sentinel"},
      {"\nupstream:\n  address: redis://h:1\n  read_your_writes: false",
       "t.yaml:3: upstream.read_your_writes: only applies with upstream.cluster or "
       "upstream.sentinel"},
      {"\nupstream:\n  cluster: [redis://h:1]\n  max_replica_lag: 0",
       "t.yaml:3: upstream.max_replica_lag: must be > 0"},
      {"\nupstream:\n  sentinel: {master: m, addresses: [redis://s:1]}\n  max_replica_lag: 0",
       "t.yaml:3: upstream.max_replica_lag: must be > 0"},
      {"\nupstream:\n  cluster: [redis://h:1]\n  read_from: nearest",
       "t.yaml:3: upstream.read_from: expected one of: primary, prefer_replica, replica"},
      {"\nupstream:\n  cluster: [redis://h:1]\n  topology_refresh: 0s",
       "t.yaml:3: upstream.topology_refresh: must be > 0"},
      {"\nupstream:\n  cluster: [redis://h:1]\n  max_redirects: 101",
       "t.yaml:3: upstream.max_redirects: must be <= 100"},
      {"\nupstream:\n  address: redis://h:1\n  failover_hold: 5s",
       "t.yaml:3: upstream.failover_hold: only applies with upstream.cluster"},
      {"\nupstream:\n  cluster: [redis://h:1]\n  failover_hold_max: 0",
       "t.yaml:3: upstream.failover_hold_max: must be > 0"},
      {"\nupstream:\n  cluster: []",
       "t.yaml:2: upstream.cluster: expected a list of seed nodes like [redis://10.0.0.1:7000]"},
      {"\nupstream:\n  connect_timeout: 10",
       "t.yaml:2: upstream.connect_timeout: expected a "
       "duration like 300ms, 10s, 5m"},
      {"\nupstream:\n  command_timeout: 0", "t.yaml:2: upstream.command_timeout: must be > 0"},
      {"\nupstream:\n  connections_per_thread: 65",
       "t.yaml:2: upstream.connections_per_thread: must be <= 64"},
      {"\nupstream:\n  reconnect_backoff_min: 5s\n  reconnect_backoff_max: 1s",
       "t.yaml:2: upstream.reconnect_backoff_min: must be <= reconnect_backoff_max (1s)"},
      {"\nclient:\n  max_request: lots",
       "t.yaml:2: client.max_request: expected a size like 64kb, 512mb, 1gb"},
      {"\nclient:\n  max_output_buffer: 0", "t.yaml:2: client.max_output_buffer: must be > 0"},
      {"\nclient:\n  max_clients: -1", "t.yaml:2: client.max_clients: must be > 0"},
      {"\nclient:\n  max_pipeline: 1.5", "t.yaml:2: client.max_pipeline: expected an integer"},
      {"\nclient:\n  idle_timeout: -1s", "t.yaml:2: client.idle_timeout: must be >= 0"},
      {"\nclient:\n  allow_commands: FLUSHALL",
       "t.yaml:2: client.allow_commands: expected a list like [GET, MGET]"},
      {"\nclient:\n  allow_commands: [FLUSHALL, 'rm -rf']",
       "t.yaml:2: client.allow_commands[1]: not a command name"},
      {"\ncache:\n  max_memory: 0", "t.yaml:2: cache.max_memory: must be > 0"},
      {"\ncache:\n  shards: 5000", "t.yaml:2: cache.shards: must be <= 4096"},
  });
}

TEST_CASE("policy errors name the policy index and key", "[config][errors]") {
  check_cases({
      {"policies: {prefix: a}", "t.yaml:1: policies: expected a list of policies (- prefix: ...)"},
      {"\npolicies:\n  - just a string",
       "t.yaml:2: policies[0]: expected a map with prefix, ttl, ..."},
      {"\npolicies:\n  - ttl: 5s", "t.yaml:2: policies[0]: missing required key prefix"},
      {"\npolicies:\n  - {prefix: a, read_from: prefer_replica}",
       "t.yaml:2: policies[0].read_from: prefer_replica needs upstream.sentinel or "
       "upstream.cluster with upstream.read_from set (the replicas whose offsets Corral polls)"},
      {"\nupstream:\n  sentinel: {master: m, addresses: [redis://s:1]}\n  read_from: "
       "prefer_replica\npolicies:\n  - {prefix: a, read_from: replica}",
       "t.yaml:5: policies[0].read_from: must be primary or prefer_replica: a fill goes to the "
       "primary when no replica has seen the last invalidation"},
      {"\nupstream:\n  sentinel: {master: m, addresses: [redis://s:1]}\n  read_from: "
       "prefer_replica\npolicies:\n  - {prefix: a, read_from: prefer_replica, origin: {http: "
       "\"http://h/{key}\"}}",
       "t.yaml:5: policies[0].read_from: needs origin: redis"},
      {"\npolicies:\n  - prefix: \"\"", "t.yaml:2: policies[0].prefix: must not be empty"},
      {"\npolicies:\n  - prefix: a\n  - prefix: b\n  - prefix: a",
       "t.yaml:4: policies[2].prefix: duplicate prefix \"a\" (also policies[0])"},
      {"\npolicies:\n  - prefix: a\n    ttl: 0", "t.yaml:3: policies[0].ttl: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    ttl: 5",
       "t.yaml:3: policies[0].ttl: expected a "
       "duration like 300ms, 10s, 5m"},
      {"\npolicies:\n  - prefix: a\n    jitter: 1",
       "t.yaml:3: policies[0].jitter: must be in [0, 1)"},
      {"\npolicies:\n  - prefix: a\n    jitter: -0.1",
       "t.yaml:3: policies[0].jitter: must be in [0, 1)"},
      {"\npolicies:\n  - prefix: a\n    beta: -1", "t.yaml:3: policies[0].beta: must be >= 0"},
      {"\npolicies:\n  - prefix: a\n    beta: much",
       "t.yaml:3: policies[0].beta: expected a number"},
      {"\npolicies:\n  - prefix: a\n    grace: -5s", "t.yaml:3: policies[0].grace: must be >= 0"},
      {"\npolicies:\n  - prefix: a\n    stale_if_error: -1m",
       "t.yaml:3: policies[0].stale_if_error: must be >= 0"},
      {"\npolicies:\n  - prefix: a\n    negative_ttl: forever",
       "t.yaml:3: policies[0].negative_ttl: expected a duration like 300ms, 10s, 5m"},
      {"\npolicies:\n  - prefix: a\n    shared: maybe",
       "t.yaml:3: policies[0].shared: expected true or false"},
      {"\npolicies:\n  - prefix: a\n    shared: true",
       "t.yaml:3: policies[0].shared: needs an http origin (with origin: redis the value already "
       "lives in the shared Redis)"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: 'http://h/{key}' }\n    shared: true\n"
       "    commands: [GET, STRLEN]",
       "t.yaml:5: policies[0].commands: STRLEN is not cached in fleet mode (shared: true caches "
       "GET and MGET)"},
      {"\npolicies:\n  - prefix: a\n    max_waiters: -1",
       "t.yaml:3: policies[0].max_waiters: must be >= 0"},
      {"\npolicies:\n  - prefix: a\n    wait_timeout: 0",
       "t.yaml:3: policies[0].wait_timeout: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    on_overflow: drop",
       "t.yaml:3: policies[0].on_overflow: expected one of: stale, error, passthrough"},
      {"\npolicies:\n  - prefix: a\n    max_origin_concurrency: 0",
       "t.yaml:3: policies[0].max_origin_concurrency: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    max_origin_queue: -1",
       "t.yaml:3: policies[0].max_origin_queue: must be >= 0"},
      {"\npolicies:\n  - prefix: a\n    origin_queue_timeout: 0",
       "t.yaml:3: policies[0].origin_queue_timeout: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    on_invalidate: keep",
       "t.yaml:3: policies[0].on_invalidate: expected one of: drop, refresh"},
      {"\npolicies:\n  - prefix: a\n    writes: allow",
       "t.yaml:3: policies[0].writes: expected one of: refuse, passthrough"},
      {"\npolicies:\n  - prefix: a\n    backoff_min: 0",
       "t.yaml:3: policies[0].backoff_min: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    backoff_min: 1m\n    backoff_max: 30s",
       "t.yaml:3: policies[0].backoff_min: must be <= backoff_max (30s)"},
      {"\npolicies:\n  - prefix: a\n    breaker_failures: 0",
       "t.yaml:3: policies[0].breaker_failures: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    breaker_open: 0",
       "t.yaml:3: policies[0].breaker_open: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    lock_ttl: -1s",
       "t.yaml:3: policies[0].lock_ttl: must be >= 0"},
      {"\npolicies:\n  - prefix: a\n    commands: [GET, hset]",
       "t.yaml:3: policies[0].commands[1]: HSET cannot be cached; expected some of: GET MGET HGET "
       "HGETALL HMGET SMEMBERS LRANGE ZRANGE EXISTS STRLEN GETRANGE"},
      {"\npolicies:\n  - prefix: a\n    commands: []",
       "t.yaml:3: policies[0].commands: must not be empty"},
  });
}

TEST_CASE("origin and versioned errors", "[config][errors]") {
  check_cases({
      {"\npolicies:\n  - prefix: a\n    origin: mysql",
       "t.yaml:3: policies[0].origin: expected redis or { http: URL_TEMPLATE, ... }"},
      {"\npolicies:\n  - prefix: a\n    origin: [redis]",
       "t.yaml:3: policies[0].origin: expected redis or { http: URL_TEMPLATE, ... }"},
      {"\npolicies:\n  - prefix: a\n    origin: { timeout: 1s }",
       "t.yaml:3: policies[0].origin: missing required key http (the URL template)"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"https://h/{key}\" }",
       "t.yaml:3: policies[0].origin.http: https is not supported; use http://"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"ftp://h/{key}\" }",
       "t.yaml:3: policies[0].origin.http: must start with http://"},
      // User info would put a password into every error message and log line.
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"http://u:pw@h/{key}\" }",
       "t.yaml:3: policies[0].origin.http: user info is not supported"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"http://h/v1/../{key}\" }",
       "t.yaml:3: policies[0].origin.http: a \".\" or \"..\" path segment is not allowed"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"http:///{key}\" }",
       "t.yaml:3: policies[0].origin.http: needs a host after http://"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"http://h/x\" }",
       "t.yaml:3: policies[0].origin.http: must contain {key} or {suffix}"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"http://h/{id}\" }",
       "t.yaml:3: policies[0].origin.http: unknown placeholder {id}; use {key} or {suffix}"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"http://h/{key\" }",
       "t.yaml:3: policies[0].origin.http: unbalanced { } in the template"},
      {"\npolicies:\n  - prefix: a\n    origin:\n      http: http://h/{key}\n      timeout: 0",
       "t.yaml:5: policies[0].origin.timeout: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    origin:\n      http: http://h/{key}\n      retries: 11",
       "t.yaml:5: policies[0].origin.retries: must be <= 10"},
      {"\npolicies:\n  - prefix: a\n    origin:\n      http: http://h/{key}\n"
       "      cache_control: obey",
       "t.yaml:5: policies[0].origin.cache_control: expected one of: honor, ignore"},
      {"\npolicies:\n  - prefix: a\n    ttl: 10s\n    origin:\n      http: http://h/{key}\n"
       "      max_ttl: 5s",
       "t.yaml:6: policies[0].origin.max_ttl: must be >= the policy's ttl (10s)"},
      {"\npolicies:\n  - prefix: a\n    origin:\n      http: http://h/{key}\n      max_ttl: 0",
       "t.yaml:5: policies[0].origin.max_ttl: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    origin:\n      http: http://h/{key}\n      max_body: big",
       "t.yaml:5: policies[0].origin.max_body: expected a size like 64kb, 512mb, 1gb"},
      {"\npolicies:\n  - prefix: a\n    origin:\n      http: http://h/{key}\n      headers: [a]",
       "t.yaml:5: policies[0].origin.headers: expected a map of header names to values"},
      {"\npolicies:\n  - prefix: a\n    origin:\n      http: http://h/{key}\n      headers:\n"
       "        \"Bad Name\": x",
       "t.yaml:6: policies[0].origin.headers.Bad Name: not a valid header name"},
      {"\npolicies:\n  - prefix: a\n    origin:\n      http: http://h/{key}\n      headers:\n"
       "        X-A: \"1\\r\\nX-Evil: 2\"",
       "t.yaml:6: policies[0].origin.headers.X-A: must not contain CR, LF or NUL"},
      {"\npolicies:\n  - prefix: a\n    origin:\n      http: http://h/{key}\n      headers:\n"
       "        x-a: 1\n        X-A: 2",
       "t.yaml:7: policies[0].origin.headers.X-A: duplicate header"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"http://h/{key}\" }\n"
       "    commands: [GET, HGETALL]",
       "t.yaml:4: policies[0].commands: HGETALL needs origin: redis; an http origin serves string "
       "values"},
      {"\npolicies:\n  - prefix: a\n    versioned: { keep: 2 }",
       "t.yaml:3: policies[0].versioned: missing required key pointer"},
      {"\npolicies:\n  - prefix: a\n    versioned: { pointer: p, keep: 0 }",
       "t.yaml:3: policies[0].versioned.keep: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    versioned:\n      pointer: p\n      pointer_refresh: 0",
       "t.yaml:5: policies[0].versioned.pointer_refresh: must be > 0"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"http://h/{key}\" }\n"
       "    versioned: { pointer: p }",
       "t.yaml:4: policies[0].versioned: needs origin: redis (versions live in the upstream "
       "Redis)"},
  });
}

TEST_CASE("unknown keys are errors at every level", "[config][errors]") {
  check_cases({
      {"lisen: 127.0.0.1:1", "t.yaml:1: lisen: unknown key (did you mean listen?)"},
      {"bogus: 1", "t.yaml:1: bogus: unknown key"},
      {"\nupstream:\n  adress: redis://h",
       "t.yaml:2: upstream.adress: unknown key (did you mean address?)"},
      {"\nclient:\n  timeout: 1s", "t.yaml:2: client.timeout: unknown key"},
      {"\ncache:\n  size: 1mb", "t.yaml:2: cache.size: unknown key"},
      {"\npolicies:\n  - prefix: a\n    tll: 5s",
       "t.yaml:3: policies[0].tll: unknown key (did you mean ttl?)"},
      {"\npolicies:\n  - prefix: a\n    origin: { http: \"http://h/{key}\", timout: 1s }",
       "t.yaml:3: policies[0].origin.timout: unknown key (did you mean timeout?)"},
      {"\npolicies:\n  - prefix: a\n    versioned:\n      pointer: p\n      keeps: 3",
       "t.yaml:5: policies[0].versioned.keeps: unknown key (did you mean keep?)"},
      {"listen: 127.0.0.1:1\nlisten: 127.0.0.1:2", "t.yaml:2: listen: duplicate key"},
  });
}

TEST_CASE("every error of a file is reported, in line order", "[config][errors]") {
  const auto errors = errors_of(yaml(R"(
listen: nowhere
threads: -2
upstream:
  connect_timeout: fast
  colour: blue
policies:
  - prefix: "a:"
    ttl: 0
    jitter: 2
  - ttl: 1s
    beta: -1
)"));
  CHECK(errors == std::vector<std::string>{
                      "t.yaml:1: listen: expected host:port like 127.0.0.1:6380",
                      "t.yaml:2: threads: must be > 0",
                      "t.yaml:4: upstream.connect_timeout: expected a duration like 300ms, 10s, 5m",
                      "t.yaml:5: upstream.colour: unknown key",
                      "t.yaml:8: policies[0].ttl: must be > 0",
                      "t.yaml:9: policies[0].jitter: must be in [0, 1)",
                      "t.yaml:10: policies[1]: missing required key prefix",
                      "t.yaml:11: policies[1].beta: must be >= 0",
                  });
}

TEST_CASE("an empty value is reported on its key's line", "[config][errors]") {
  // yaml-cpp places an empty value at the next token, which may be lines further down.
  const auto errors = errors_of(yaml(R"(
policies:
  - prefix: a
    ttl:

    beta:
  - prefix:
)"));
  CHECK(errors == std::vector<std::string>{
                      "t.yaml:3: policies[0].ttl: expected a duration like 300ms, 10s, 5m",
                      "t.yaml:5: policies[0].beta: expected a number",
                      "t.yaml:6: policies[1].prefix: must not be empty",
                  });
}

TEST_CASE("bad YAML and unreadable files are clean errors", "[config][errors]") {
  auto errors = errors_of("listen: 127.0.0.1:1\nupstream: [unclosed\n");
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::StartsWith("t.yaml:3: invalid YAML: "));

  // Text after the first document was silently ignored: a second document, or keys after a
  // flow mapping (a JSON config with a line appended).
  errors = errors_of("listen: 127.0.0.1:1\n---\nbogus_key: 1\n");
  CHECK(errors == std::vector<std::string>{"t.yaml:3: the file holds 2 YAML documents; Corral "
                                           "reads exactly one (the second starts here)"});
  errors = errors_of("{\"listen\": \"127.0.0.1:1\"}\nbogus_key: 1\n");
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::StartsWith("t.yaml:2: the file holds 2 YAML documents"));

  errors = errors_of("- just\n- a list\n");
  CHECK(errors == std::vector<std::string>{"t.yaml:1: expected a map of settings, found a list"});

  LoadResult result = load_settings_file("/nonexistent/corral.yaml");
  REQUIRE(std::holds_alternative<ConfigErrors>(result));
  CHECK(
      std::get<ConfigErrors>(result).messages ==
      std::vector<std::string>{"/nonexistent/corral.yaml: cannot read: No such file or directory"});

  result = load_settings_file("/tmp");
  REQUIRE(std::holds_alternative<ConfigErrors>(result));
  CHECK(std::get<ConfigErrors>(result).messages ==
        std::vector<std::string>{"/tmp: cannot read: it is a directory"});

  // A file's errors carry its path as given.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("unit_config_" + std::to_string(::getpid()) + ".yaml"))
                               .string();
  std::ofstream(path) << "cache:\n  shards: 0\n";
  result = load_settings_file(path);
  std::filesystem::remove(path);
  REQUIRE(std::holds_alternative<ConfigErrors>(result));
  CHECK(std::get<ConfigErrors>(result).messages ==
        std::vector<std::string>{path + ":2: cache.shards: must be > 0"});
}

TEST_CASE("hostile input never throws out of the loader", "[config][errors]") {
  const char* inputs[] = {"",
                          "~",
                          "[",
                          "{a: [b, {c: d}]}",
                          "? [a]\n: b",
                          "&a [*a]",
                          "listen: *x",
                          "\t\tbad",
                          "policies: [[[[]]]]",
                          "policies:\n  - !!binary aGk=",
                          "upstream: {cluster: {a: b}}"};
  for (const char* input : inputs) {
    INFO(input);
    CHECK_NOTHROW(load_settings_text(input, "t.yaml"));
  }
}
