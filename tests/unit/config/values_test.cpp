// Tests of the typed scalar grammar: durations, sizes, numbers, addresses, ${ENV} and the
// formatters.
#include <catch2/catch.hpp>

#include <map>

#include "config/values.hpp"

using namespace corral::config;
using namespace std::chrono_literals;

TEST_CASE("durations parse with units, sums and a bare zero", "[config][values]") {
  struct Row {
    const char* text;
    std::int64_t ms;
  };
  const Row rows[] = {{"0", 0},          {"300ms", 300},     {"10s", 10'000},      {"5m", 300'000},
                      {"1h", 3'600'000}, {"1d", 86'400'000}, {"1h30m", 5'400'000}, {"10S", 10'000},
                      {"0s", 0},         {"-5s", -5000}};
  for (const Row& row : rows) {
    INFO(row.text);
    const auto d = parse_duration(row.text);
    REQUIRE(d);
    CHECK(d->count() == row.ms);
  }
}

TEST_CASE("durations refuse bare numbers and unknown units", "[config][values]") {
  for (const char* bad : {"", "10", "1.5s", "5 minutes", "s", "10x", "ms10", "--1s", "1h 30m"}) {
    INFO(bad);
    const auto d = parse_duration(bad);
    CHECK_FALSE(d);
    CHECK(d.error == "expected a duration like 300ms, 10s, 5m");
  }
  CHECK(parse_duration("99999999999999999999h").error == "expected a duration like 300ms, 10s, 5m");
  CHECK(parse_duration("9999999999999999h").error == "duration is too large");
}

TEST_CASE("sizes are 1024-based and case-insensitive", "[config][values]") {
  const std::map<std::string, std::uint64_t> rows{
      {"0", 0},        {"100", 100},          {"100b", 100},       {"64kb", 64 * 1024},
      {"64KB", 65536}, {"512mb", 512u << 20}, {"1gb", 1u << 30},   {"1GB", 1u << 30},
      {"2k", 2048},    {"3m", 3u << 20},      {"1tb", 1ull << 40}, {"64 kb", 65536}};
  for (const auto& [text, bytes] : rows) {
    INFO(text);
    const auto n = parse_size(text);
    REQUIRE(n);
    CHECK(*n == bytes);
  }
  for (const char* bad : {"", "kb", "-1kb", "1.5mb", "10 parsecs", "1pb"}) {
    INFO(bad);
    CHECK(parse_size(bad).error == "expected a size like 64kb, 512mb, 1gb");
  }
  CHECK(parse_size("99999999999tb").error == "size is too large");
}

TEST_CASE("integers, numbers and booleans", "[config][values]") {
  CHECK(*parse_integer("42") == 42);
  CHECK(*parse_integer("-7") == -7);
  for (const char* bad : {"", "4x", "1.0", "0x10", "+1", " 1"}) CHECK_FALSE(parse_integer(bad));
  CHECK(*parse_number("0.2") == Approx(0.2));
  CHECK(*parse_number("1") == 1.0);
  CHECK(*parse_number("1e-3") == Approx(0.001));
  for (const char* bad : {"", "abc", "nan", "inf", "0.2x"}) CHECK_FALSE(parse_number(bad));
  for (const char* yes : {"true", "True", "yes", "on"}) CHECK(*parse_bool(yes));
  for (const char* no : {"false", "NO", "off"}) CHECK_FALSE(*parse_bool(no));
  CHECK(parse_bool("maybe").error == "expected true or false");
}

TEST_CASE("endpoints: host:port, bracketed IPv6, port ranges", "[config][values]") {
  auto e = parse_endpoint("127.0.0.1:6380", false);
  REQUIRE(e);
  CHECK(e->host == "127.0.0.1");
  CHECK(e->port == 6380);
  e = parse_endpoint("[::1]:7000", false);
  REQUIRE(e);
  CHECK(e->host == "::1");
  CHECK(format_endpoint(*e) == "[::1]:7000");
  CHECK(parse_endpoint("localhost:0", true));
  CHECK(parse_endpoint("localhost:0", false).error == "port must be in 1..65535");
  CHECK(parse_endpoint("localhost:65536", true).error == "port must be in 0..65535");
  CHECK(parse_endpoint("::1:7000", false).error ==
        "IPv6 addresses go in brackets, like [::1]:6380");
  for (const char* bad : {"", "localhost", ":6380", "host:", "host:port", "[::1]7000", "a b:1"}) {
    INFO(bad);
    CHECK(parse_endpoint(bad, true).error == "expected host:port like 127.0.0.1:6380");
  }
}

TEST_CASE("redis URLs carry credentials, port and database", "[config][values]") {
  auto u = parse_redis_url("redis://alice:p%40ss@cache.local:7000/3");
  REQUIRE(u);
  CHECK(u->endpoint.host == "cache.local");
  CHECK(u->endpoint.port == 7000);
  CHECK(u->username == "alice");
  CHECK(u->password == "p@ss");
  CHECK(u->database == 3);

  u = parse_redis_url("REDIS://:secret@h");
  REQUIRE(u);
  CHECK(u->username.empty());
  CHECK(u->password == "secret");
  CHECK(u->endpoint.port == 6379);
  CHECK(u->database == 0);

  u = parse_redis_url("redis://[::1]/");
  REQUIRE(u);
  CHECK(u->endpoint.host == "::1");
  CHECK(u->endpoint.port == 6379);

  const std::string expected = "expected redis://[user:pass@]host:port[/db] (or rediss:// for TLS)";
  for (const char* bad : {"", "127.0.0.1:6379", "http://h:1", "redis://", "redis://h:x"}) {
    INFO(bad);
    CHECK(parse_redis_url(bad).error == expected);
  }
  CHECK(parse_redis_url("redis://h/db").error == "the database after '/' must be a number");
  CHECK(parse_redis_url("redis://a:%zz@h").error == "bad %-escape in the credentials");
  CHECK(parse_redis_url("rediss://h")->tls);
  CHECK_FALSE(parse_redis_url("redis://h")->tls);
  CHECK(format_redis_url({"h", 7000}, 3) == "redis://h:7000/3");
  CHECK(format_redis_url({"h", 7000}, 0, true) == "rediss://h:7000");
}

TEST_CASE("${ENV} expansion", "[config][values]") {
  const std::map<std::string, std::string> vars{{"HOST", "db.local"}, {"EMPTY", ""}};
  const EnvLookup env = [&](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  CHECK(*expand_env("redis://${HOST}:6379", env) == "redis://db.local:6379");
  CHECK(*expand_env("${HOST}${HOST}", env) == "db.localdb.local");
  CHECK(*expand_env("${MISSING:-fallback}", env) == "fallback");
  CHECK(*expand_env("${EMPTY:-fallback}", env) == "fallback");
  CHECK(expand_env("${EMPTY}", env)->empty());
  CHECK(expand_env("${MISSING:-}", env)->empty());
  CHECK(*expand_env("${MISSING:-http://h/{key}}", env) == "http://h/{key}");
  CHECK(*expand_env("pa$$word $x $${HOST}", env) == "pa$$word $x ${HOST}");
  CHECK(expand_env("${MISSING}", env).error ==
        "environment variable MISSING is not set (write ${MISSING:-default} to give a default)");
  CHECK(expand_env("${HOST", env).error == "unterminated ${");
  CHECK(expand_env("${1BAD}", env).error == "bad environment variable name in ${1BAD}");
  CHECK(*expand_env(escape_env("a${b}"), env) == "a${b}");
}

TEST_CASE("formatters read back through the parsers", "[config][values]") {
  for (std::int64_t ms : {0, 1, 300, 1000, 1500, 60'000, 90'000, 3'600'000, 86'400'000}) {
    const auto d = parse_duration(format_duration(Duration{ms}));
    REQUIRE(d);
    CHECK(d->count() == ms);
  }
  CHECK(format_duration(300ms) == "300ms");
  CHECK(format_duration(24h) == "24h");
  CHECK(format_duration(Duration{-5000}) == "-5s");
  for (std::uint64_t n : {0ull, 1ull, 1000ull, 1024ull, 65536ull, 512ull << 20, 3ull << 30}) {
    const auto s = parse_size(format_size(n));
    REQUIRE(s);
    CHECK(*s == n);
  }
  CHECK(format_size(512u << 20) == "512mb");
  CHECK(format_size(1000) == "1000");
  for (double v : {0.0, 0.2, 1.0, 0.1 + 0.2, 1e-9}) CHECK(*parse_number(format_number(v)) == v);
  CHECK(format_number(0.2) == "0.2");
}
