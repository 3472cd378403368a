// The process-wide runtime: reloads carry per-policy state by prefix, counters for the admin
// commands, invalidation by source, and the Prometheus collector.
#include <prometheus/text_serializer.h>

#include "engine_support.hpp"
#include "stampede/policy/policy_runtime.hpp"

using namespace corral;
using namespace corral::test;
using stampede::InvalidationSource;
using stampede::LookupOutcome;

TEST_CASE("a reload keeps the state of prefixes that stay and drops removed ones", "[runtime]") {
  Fixture f({policy("p:"), policy("q:")});
  REQUIRE(f.get("p:1", 1));
  f.origin().value(0, "v");
  f.run();
  REQUIRE(f.get("q:1", 2));
  f.origin().value(1, "w");
  f.run();
  const auto before = f.runtime->policies();

  auto longer = policy("p:");
  longer.ttl = 20s;
  f.runtime->reload({longer, policy("r:")});
  const auto after = f.runtime->policies();
  CHECK(after->runtimes[0] == before->runtimes[0]);
  CHECK(after->stats[0] == before->stats[0]);
  CHECK(f.stats("p:").lookup(LookupOutcome::miss) == 1);
  CHECK_FALSE(f.runtime->stats_for("q:"));
  CHECK(f.runtime->stats_for("r:")->lookups == decltype(after->stats[0]->snapshot().lookups){});
  // q: entries are gone (writes to them are no longer seen); p: entries stay.
  CHECK_FALSE(f.runtime->store().peek({"q:1", "GET"}, f.clock.now()));
  CHECK(f.runtime->store().peek({"p:1", "GET"}, f.clock.now()));
  CHECK_FALSE(f.get("q:1", 3));

  // The engine picks the new snapshot up: the next store follows the new TTL.
  f.runtime->invalidate_key("p:1", InvalidationSource::admin);
  REQUIRE(f.get("p:1", 4));
  f.origin().value(2, "v2");
  f.run();
  CHECK(f.runtime->store().peek({"p:1", "GET"}, f.clock.now())->ttl() == 20s);
}

TEST_CASE("invalidations are counted by source and policy", "[runtime]") {
  Fixture f({policy("p:"), policy("p:sub:")});
  CHECK(f.runtime->invalidate_key("p:1", InvalidationSource::tracking) == 0);
  f.runtime->invalidate_prefix("p:", InvalidationSource::admin);
  f.runtime->count_invalidation("p:sub:1", InvalidationSource::tracking);
  f.runtime->count_invalidation("nothing", InvalidationSource::tracking);
  CHECK(f.stats("p:").invalidation(InvalidationSource::tracking) == 1);
  CHECK(f.stats("p:").invalidation(InvalidationSource::admin) == 1);
  CHECK(f.stats("p:sub:").invalidation(InvalidationSource::admin) == 1);
  CHECK(f.stats("p:sub:").invalidation(InvalidationSource::tracking) == 1);
  const auto policies = f.runtime->policies();
  CHECK(policies->find("p:sub:x")->prefix == "p:sub:");
  CHECK(policies->find("zzz") == nullptr);
  CHECK(f.runtime->all_stats().size() == 2);
}

TEST_CASE("the collector exposes per-policy series and the store's totals", "[runtime]") {
  Fixture f;
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.get("p:1", 2));
  f.origin().value(0, "v", 3ms);
  f.run();
  const auto families = f.runtime->collectable()->Collect();
  const auto text = prometheus::TextSerializer().Serialize(families);
  for (const auto* line : {
           "corral_cache_lookups_total{policy=\"p:\",outcome=\"miss\"} 1",
           "corral_cache_lookups_total{policy=\"p:\",outcome=\"coalesced\"} 1",
           "corral_stampede_blocked_total{policy=\"p:\"} 1",
           "corral_origin_requests_total{policy=\"p:\",origin=\"redis\"} 1",
           "corral_origin_request_duration_seconds_bucket{policy=\"p:\",origin=\"redis\",le=\"0."
           "005\"} 1",
           "corral_origin_request_duration_seconds_count{policy=\"p:\",origin=\"redis\"} 1",
           "corral_circuit_breaker_state{policy=\"p:\"} 0",
           "corral_cache_invalidations_total{policy=\"p:\",source=\"flush\"} 0",
           "corral_cache_entries 1",
           "corral_cache_evictions_total 0",
       }) {
    INFO(line);
    CHECK(text.find(line) != std::string::npos);
  }
  CHECK(text.find("# TYPE corral_cache_background_refresh_duration_seconds histogram") !=
        std::string::npos);
}
