// Tests of describe(): every section shown, secrets masked, and the text loads back to the same.
#include "config/settings_dump.hpp"
#include "test_support.hpp"

using namespace corral::config;
using namespace corral::config::test;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("describe shows effective values and masks secrets", "[config][dump]") {
  const Settings s = must_load(yaml(R"(
metrics: 127.0.0.1:9121
threads: 2
upstream:
  address: redis://alice:hunter2@h:7000/1
client:
  password: clientpw
policies:
  - prefix: "feat:"
    origin:
      http: http://h/{key}?api_key=urlsecret&id={suffix}
      headers: { Authorization: "Bearer tok", X-Api-Key: k, X-Client: corral }
    ttl: 5m
    jitter: 0.2
)"));
  const std::string text = describe(s);
  INFO(text);
  CHECK(contains(text, "listen: 127.0.0.1:6380"));
  CHECK(contains(text, "threads: 2"));
  CHECK(contains(text, "address: redis://h:7000/1"));
  CHECK(contains(text, "username: alice"));
  CHECK(contains(text, "ttl: 5m"));
  CHECK(contains(text, "jitter: 0.2"));
  CHECK(contains(text, "max_memory: 256mb"));
  CHECK(contains(text, "writes: refuse"));
  CHECK(contains(text, "X-Client: corral"));
  CHECK(contains(text, "cache_control: honor"));
  CHECK(contains(text, "max_ttl: 50m"));  // the default: ten times the policy's ttl
  CHECK(contains(text, "commands: [GET, MGET]"));
  CHECK(contains(text, "http://h/{key}?api_key=***&id={suffix}"));
  for (const char* secret : {"hunter2", "clientpw", "tok", ": k\n", "urlsecret"}) {
    INFO(secret);
    CHECK_FALSE(contains(text, secret));
  }
  CHECK(contains(text, "********"));
}

TEST_CASE("describe output loads back into the same settings", "[config][dump]") {
  for (const char* name : {"corral.yaml", "example.yaml"}) {
    const LoadResult first = load_settings_file(std::string(CORRAL_SOURCE_DIR) + "/config/" + name);
    REQUIRE(std::holds_alternative<Settings>(first));
    const std::string once = describe(std::get<Settings>(first));
    INFO(once);
    const Settings again = must_load(once);
    // Masked secrets reload as "********" and mask again, so the second rendering is identical.
    CHECK(describe(again).substr(describe(again).find('\n')) == once.substr(once.find('\n')));
  }

  const Settings cluster = must_load(yaml(R"(
upstream:
  cluster: [redis://a:7000, "redis://[::1]:7001"]
  read_from: replica
  max_redirects: 2
client:
  allow_commands: [FLUSHDB]
policies:
  - prefix: "has $${braces}: and # hash"
    origin: { http: "http://127.0.0.1:1/{key}" }
)"));
  const std::string text = describe(cluster);
  INFO(text);
  const Settings back = must_load(text);
  CHECK(back.upstream.cluster);
  CHECK(back.upstream.servers.size() == 2);
  CHECK(back.upstream.servers[1].host == "::1");
  CHECK(back.upstream.read_from == ReadFrom::replica);
  CHECK(back.upstream.max_redirects == 2);
  CHECK(back.client.allow_commands == std::vector<std::string>{"FLUSHDB"});
  CHECK(back.policies[0].prefix == "has ${braces}: and # hash");
  CHECK(back.policies[0].origin == OriginKind::http);

  const Settings sentinel = must_load(yaml(R"(
upstream:
  sentinel:
    master: m
    addresses: ["redis://:url-sentinel-secret@s:26379", "redis://t:26380"]
    failover_hold: 3s
  password: primary-secret
  read_from: prefer_replica
  max_replica_lag: 64kb
  read_your_writes: false
)"));
  const std::string sentinel_text = describe(sentinel);
  INFO(sentinel_text);
  // The Sentinels' and the primary's passwords, from a URL or a key, are never printed.
  CHECK(sentinel_text.find("secret") == std::string::npos);
  CHECK(sentinel_text.find("addresses: [redis://s:26379, redis://t:26380]") != std::string::npos);
  const Settings sentinel_back = must_load(sentinel_text);
  REQUIRE(sentinel_back.upstream.sentinel);
  CHECK(sentinel_back.upstream.sentinel->master == "m");
  CHECK(sentinel_back.upstream.sentinel->addresses.size() == 2);
  CHECK(sentinel_back.upstream.sentinel->failover_hold == std::chrono::seconds(3));
  CHECK(sentinel_back.upstream.sentinel->password == "********");
  CHECK(sentinel_back.upstream.password == "********");
  CHECK(sentinel_back.upstream.read_from == ReadFrom::prefer_replica);
  CHECK(sentinel_back.upstream.max_replica_lag == 64 * 1024);
  CHECK_FALSE(sentinel_back.upstream.read_your_writes);
}
