// Tests of Cache-Control parsing (every directive, malformed values, duplicates, quoting), the
// freshness of a response (s-maxage, max-age, Age, Expires against Date, the max_ttl cap),
// tags, validators and HTTP-date parsing.
#include <catch2/catch.hpp>

#include "origin/http_date.hpp"
#include "origin/response_caching.hpp"

using namespace corral::origin;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

// 1994-11-06 08:49:37 UTC, the RFC's example date.
const auto kDate = std::chrono::sys_days(std::chrono::year{1994} / 11 / 6) + 8h + 49min + 37s;

ResponseCaching evaluate(ResponseHeaders headers, milliseconds max_ttl = 3600s,
                         FreshnessHeaders mode = FreshnessHeaders::honor) {
  return evaluate_response(headers, mode, kDate, max_ttl);
}

ResponseHeaders with_cache_control(std::string_view value) {
  ResponseHeaders h;
  h.cache_control = value;
  return h;
}

}  // namespace

TEST_CASE("every Cache-Control directive is read", "[cache_control]") {
  const auto cc = parse_cache_control(
      "max-age=60, s-maxage=30, stale-while-revalidate=10, stale-if-error=600, no-store, "
      "no-cache, private");
  CHECK(cc.max_age == 60);
  CHECK(cc.s_maxage == 30);
  CHECK(cc.stale_while_revalidate == 10);
  CHECK(cc.stale_if_error == 600);
  CHECK(cc.no_store);
  CHECK(cc.no_cache);
  CHECK(cc.is_private);
  CHECK_FALSE(cc.invalid_freshness);
}

TEST_CASE("Cache-Control names are case-insensitive and spacing is free", "[cache_control]") {
  const auto cc = parse_cache_control("  MAX-AGE=5 ,No-Store,,  Stale-If-Error = 7 ");
  CHECK(cc.max_age == 5);
  CHECK(cc.no_store);
  CHECK(cc.stale_if_error == 7);
}

TEST_CASE("quoted arguments and qualified forms", "[cache_control]") {
  const auto cc = parse_cache_control(
      R"(max-age="20", no-cache="Set-Cookie, X-Foo", private="Authorization", ext="a,b")");
  CHECK(cc.max_age == 20);
  CHECK(cc.no_cache);
  CHECK(cc.is_private);
  CHECK_FALSE(cc.no_store);  // the comma inside the quotes is not a directive separator
}

TEST_CASE("the first occurrence of a directive wins", "[cache_control]") {
  CHECK(parse_cache_control("max-age=5, max-age=500").max_age == 5);
}

TEST_CASE("malformed freshness makes the response stale; other junk is ignored",
          "[cache_control]") {
  for (const auto* value : {"max-age=soon", "max-age=", "max-age", "max-age=-1", "s-maxage=1.5"}) {
    INFO(value);
    const auto cc = parse_cache_control(value);
    CHECK(cc.invalid_freshness);
    CHECK(evaluate(with_cache_control(value)).fresh_for == milliseconds(0));
  }
  const auto junk = parse_cache_control("stale-if-error=x, =, ,,, unknown-directive=3, \"");
  CHECK_FALSE(junk.stale_if_error);
  CHECK_FALSE(junk.invalid_freshness);
  CHECK_FALSE(evaluate(with_cache_control("stale-if-error=x")).fresh_for);
}

TEST_CASE("huge delta-seconds saturate at 2^31", "[cache_control]") {
  CHECK(parse_cache_control("max-age=99999999999999999999999").max_age == (std::int64_t{1} << 31));
}

TEST_CASE("s-maxage wins over max-age, Age is subtracted, max_ttl caps", "[freshness]") {
  CHECK(evaluate(with_cache_control("max-age=60")).fresh_for == milliseconds(60s));
  CHECK(evaluate(with_cache_control("max-age=60, s-maxage=5")).fresh_for == milliseconds(5s));
  auto aged = with_cache_control("max-age=60");
  aged.age = "45";
  CHECK(evaluate(aged).fresh_for == milliseconds(15s));
  aged.age = "90";  // older than its lifetime: stale at once, never negative
  CHECK(evaluate(aged).fresh_for == milliseconds(0));
  aged.age = "bogus";  // an unreadable Age is ignored
  CHECK(evaluate(aged).fresh_for == milliseconds(60s));
  CHECK(evaluate(with_cache_control("max-age=7200"), 600s).fresh_for == milliseconds(600s));
}

TEST_CASE("Expires counts from Date, else from the wall clock", "[freshness]") {
  ResponseHeaders h;
  h.expires = "Sun, 06 Nov 1994 08:50:37 GMT";
  h.date = "Sun, 06 Nov 1994 08:49:57 GMT";
  CHECK(evaluate(h).fresh_for == milliseconds(40s));  // Expires - Date
  h.date = {};
  CHECK(evaluate(h).fresh_for == milliseconds(60s));  // Expires - now
  h.expires = "0";                                    // invalid: already expired
  CHECK(evaluate(h).fresh_for == milliseconds(0));
  h.expires = "Sun, 06 Nov 1994 08:50:37 GMT";
  h.cache_control = "max-age=5";  // max-age wins over Expires
  CHECK(evaluate(h).fresh_for == milliseconds(5s));
  h.cache_control = {};
  h.age = "20";  // Age applies to Expires freshness too
  CHECK(evaluate(h).fresh_for == milliseconds(40s));
}

TEST_CASE("no freshness headers leave the policy's ttl", "[freshness]") {
  const auto out = evaluate({});
  CHECK_FALSE(out.fresh_for);
  CHECK(out.store);
  CHECK_FALSE(out.grace);
  CHECK_FALSE(out.stale_if_error);
  CHECK(out.validators.empty());
}

TEST_CASE("no-store and private are not stored; no-cache is stored stale", "[freshness]") {
  CHECK_FALSE(evaluate(with_cache_control("no-store")).store);
  CHECK_FALSE(evaluate(with_cache_control("private, max-age=60")).store);
  const auto no_cache = evaluate(with_cache_control("no-cache, max-age=60"));
  CHECK(no_cache.store);
  CHECK(no_cache.fresh_for == milliseconds(0));
  CHECK(no_cache.grace == milliseconds(0));
  CHECK(no_cache.revalidate_always);
}

TEST_CASE("stale-while-revalidate and stale-if-error become grace and stale_if_error",
          "[freshness]") {
  const auto out =
      evaluate(with_cache_control("max-age=1, stale-while-revalidate=30, "
                                  "stale-if-error=86400"));
  CHECK(out.grace == milliseconds(30s));
  CHECK(out.stale_if_error == milliseconds(86400s));
}

TEST_CASE("cache_control: ignore keeps validators and tags only", "[freshness]") {
  auto h = with_cache_control("no-store, max-age=1");
  h.etag = "\"x\"";
  h.surrogate_key = "a";
  const auto out = evaluate(h, 3600s, FreshnessHeaders::ignore);
  CHECK(out.store);
  CHECK_FALSE(out.fresh_for);
  CHECK(decode_validators(out.validators).etag == "\"x\"");
  CHECK(out.tags == std::vector<std::string>{"a"});
}

TEST_CASE("tags from Surrogate-Key and Cache-Tag, space or comma separated", "[tags]") {
  ResponseHeaders h;
  h.surrogate_key = " user-1  product:9 user-1 ";
  h.cache_tag = "product:9,team-a, team-b";
  CHECK(evaluate(h).tags == std::vector<std::string>{"user-1", "product:9", "team-a", "team-b"});
  std::vector<std::string> tags;
  parse_tags(std::string(kMaxTagLength + 1, 'x') + " ok", tags);
  CHECK(tags == std::vector<std::string>{"ok"});  // an over-long tag is ignored
  tags.clear();
  std::string many;
  for (int i = 0; i < 100; ++i) many += "t" + std::to_string(i) + " ";
  parse_tags(many, tags);
  CHECK(tags.size() == kMaxTags);
}

TEST_CASE("validators round-trip", "[validators]") {
  ResponseHeaders h;
  h.etag = " W/\"v1\" ";
  h.last_modified = "Sat, 05 Nov 1994 10:00:00 GMT";
  const auto v = decode_validators(evaluate(h).validators);
  CHECK(v.etag == "W/\"v1\"");
  CHECK(v.last_modified == "Sat, 05 Nov 1994 10:00:00 GMT");
  CHECK(decode_validators(encode_validators("", "")).empty());
  CHECK(decode_validators(encode_validators("\"e\"", "")).etag == "\"e\"");
}

TEST_CASE("HTTP-date in its three forms", "[http_date]") {
  CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == kDate);
  CHECK(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == kDate);
  CHECK(parse_http_date("Sun Nov  6 08:49:37 1994") == kDate);
  for (const auto* bad :
       {"", "0", "-1", "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 CET", "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT", "tomorrow"}) {
    INFO(bad);
    CHECK_FALSE(parse_http_date(bad));
  }
}
