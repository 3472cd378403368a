// The engine with an origin that speaks HTTP caching, on the manual clock: header freshness,
// no-store (answered and coalesced, never kept), no-cache, conditional refreshes and 304s, and
// tag purges (of stored entries and of fetches in flight).
#include "engine_support.hpp"

using namespace corral;
using namespace corral::test;
using origin::Outcome;
using origin::ResponseCaching;

namespace {

config::PolicySettings http_policy() {
  auto p = policy();
  p.origin = config::OriginKind::http;
  p.http.max_ttl = 100s;
  return p;
}

ResponseCaching fresh_for(std::chrono::milliseconds d, std::string validators = {}) {
  ResponseCaching caching;
  caching.fresh_for = d;
  caching.validators = std::move(validators);
  return caching;
}

std::uint64_t revalidations(const Fixture& f, stampede::RevalidationResult result) {
  return f.runtime->policies()->stats[0]->revalidations()[static_cast<std::size_t>(result)];
}

// A first miss answered with `caching`.
void prime(Fixture& f, std::string_view key, std::string_view value, ResponseCaching caching) {
  const auto call = f.origin().calls();
  REQUIRE(f.get(key, 1000 + call));
  REQUIRE(f.origin().calls() == call + 1);
  f.origin().answer_caching(call, Outcome::value, bulk(value), std::move(caching));
  f.run();
  REQUIRE(f.client->reply(1000 + call) == bulk(value));
}

}  // namespace

TEST_CASE("the response's freshness replaces the policy's ttl", "[http_caching]") {
  Fixture f({http_policy()});  // ttl 10s
  prime(f, "p:1", "v1", fresh_for(2s));
  f.clock.advance(1900ms);
  REQUIRE(f.get("p:1", 1));
  CHECK(f.origin().calls() == 1);
  f.clock.advance(200ms);
  REQUIRE(f.get("p:1", 2));
  CHECK(f.origin().calls() == 2);  // past max-age, long before the 10s ttl
}

TEST_CASE("no-store answers every waiter, keeps nothing, and drops an older copy",
          "[http_caching]") {
  Fixture f({http_policy()});
  prime(f, "p:1", "old", fresh_for(1s));
  f.clock.advance(2s);
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.get("p:1", 2));
  REQUIRE(f.origin().calls() == 2);  // the two reads share one fetch
  ResponseCaching no_store;
  no_store.store = false;
  f.origin().answer_caching(1, Outcome::value, bulk("new"), no_store);
  f.run();
  CHECK(f.client->reply(1) == bulk("new"));
  CHECK(f.client->reply(2) == bulk("new"));
  CHECK_FALSE(f.runtime->store().peek({"p:1", "GET"}, f.clock.now()));
  REQUIRE(f.get("p:1", 3));
  CHECK(f.origin().calls() == 3);  // the next read asks again
}

TEST_CASE("an expired copy with validators is refreshed conditionally; a 304 renews it",
          "[http_caching]") {
  Fixture f({http_policy()});
  prime(f, "p:1", "same", fresh_for(1s, "\"e1\"\n"));
  CHECK(f.origin().validators(0).empty());  // the first fetch had nothing to compare
  f.clock.advance(5s);                      // expired, no grace: kept for revalidation only
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.origin().calls() == 2);
  CHECK(f.origin().validators(1) == "\"e1\"\n");
  auto renewed = fresh_for(1s);
  renewed.not_modified = true;
  f.origin().answer_caching(1, Outcome::value, "", renewed);
  f.run();
  CHECK(f.client->reply(1) == bulk("same"));
  CHECK(revalidations(f, stampede::RevalidationResult::not_modified) == 1);
  REQUIRE(f.get("p:1", 2));  // fresh again
  CHECK(f.client->reply(2) == bulk("same"));
  CHECK(f.origin().calls() == 2);
  // The 304 kept the validators it did not repeat: the next refresh is conditional too.
  f.clock.advance(2s);
  REQUIRE(f.get("p:1", 3));
  REQUIRE(f.origin().calls() == 3);
  CHECK(f.origin().validators(2) == "\"e1\"\n");
  f.origin().answer_caching(2, Outcome::value, bulk("changed"), fresh_for(1s, "\"e2\"\n"));
  f.run();
  CHECK(f.client->reply(3) == bulk("changed"));
  CHECK(revalidations(f, stampede::RevalidationResult::modified) == 1);
}

TEST_CASE("a 304 to an unconditional fetch is an error, not an empty value", "[http_caching]") {
  Fixture f({http_policy()});
  REQUIRE(f.get("p:1", 1));
  auto stray = fresh_for(1s);
  stray.not_modified = true;
  f.origin().answer_caching(0, Outcome::value, "", stray);
  f.run();
  CHECK(f.client->reply(1).starts_with("-ERR corral: origin answered 304"));
}

TEST_CASE("no-cache: every read after the store revalidates first", "[http_caching]") {
  Fixture f({http_policy()});
  auto no_cache = fresh_for(0ms, "\"n\"\n");
  no_cache.grace = 0ms;
  no_cache.revalidate_always = true;
  prime(f, "p:1", "v", no_cache);
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.origin().calls() == 2);
  CHECK(f.origin().validators(1) == "\"n\"\n");
  CHECK_FALSE(f.client->has(1));  // waits for the origin's word
}

TEST_CASE("a tag purge drops stored entries with the tag on their next read", "[http_caching]") {
  Fixture f({http_policy()});
  auto red = fresh_for(60s);
  red.tags = {"red", "blue"};
  auto green = fresh_for(60s);
  green.tags = {"green"};
  prime(f, "p:1", "one", red);
  prime(f, "p:2", "two", green);
  f.runtime->tags().purge("blue");
  REQUIRE(f.get("p:2", 1));
  CHECK(f.client->reply(1) == bulk("two"));
  CHECK(f.origin().calls() == 2);
  REQUIRE(f.get("p:1", 2));
  CHECK(f.origin().calls() == 3);  // purged: fetched again
  CHECK_FALSE(f.client->has(2));
}

TEST_CASE("an answer whose tag was purged while it was fetched is delivered, not stored",
          "[http_caching]") {
  Fixture f({http_policy()});
  REQUIRE(f.get("p:1", 1));
  f.runtime->tags().purge("red");  // after the fetch began
  auto red = fresh_for(60s);
  red.tags = {"red"};
  f.origin().answer_caching(0, Outcome::value, bulk("maybe old"), red);
  f.run();
  CHECK(f.client->reply(1) == bulk("maybe old"));
  CHECK_FALSE(f.runtime->store().peek({"p:1", "GET"}, f.clock.now()));
}
