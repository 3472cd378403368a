// Misses past max_origin_concurrency: they wait in the policy's origin queue in arrival order,
// later misses of a queued key coalesce onto it, and only a full queue or origin_queue_timeout
// gives their waiters on_overflow.
#include "engine_support.hpp"

using namespace corral;
using namespace corral::test;
using stampede::LookupOutcome;
using stampede::QueueRejection;

namespace {
config::PolicySettings capped(int concurrency, std::size_t queue) {
  auto p = policy();
  p.max_origin_concurrency = concurrency;
  p.max_origin_queue = queue;
  p.on_overflow = config::OnOverflow::error;
  return p;
}
std::uint64_t rejected(const stampede::PolicyStatsSnapshot& stats, QueueRejection reason) {
  return stats.queue_rejections[static_cast<std::size_t>(reason)];
}
}  // namespace

TEST_CASE("misses past the cap wait in order and start as fetches end", "[origin_queue]") {
  Fixture f({capped(1, 10)});
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.get("p:2", 2));
  REQUIRE(f.get("p:3", 3));
  REQUIRE(f.get("p:2", 4));  // coalesces onto the queued flight of p:2
  f.run();
  CHECK(f.origin().calls() == 1);
  CHECK_FALSE(f.client->has(2));
  CHECK(f.stats().origin_queued == 2);
  CHECK(f.stats().origin_in_flight == 1);
  CHECK(f.stats().lookup(LookupOutcome::coalesced) == 1);

  f.clock.advance(40ms);
  f.origin().value(0, "one");
  f.run();
  CHECK(f.client->reply(1) == bulk("one"));
  REQUIRE(f.origin().calls() == 2);
  CHECK(f.origin().argv(1) == std::vector<std::string>{"GET", "p:2"});
  CHECK(f.stats().origin_queued == 1);
  f.origin().value(1, "two");
  f.run();
  CHECK(f.client->reply(2) == bulk("two"));
  CHECK(f.client->reply(4) == bulk("two"));
  REQUIRE(f.origin().calls() == 3);
  CHECK(f.origin().argv(2) == std::vector<std::string>{"GET", "p:3"});
  f.origin().value(2, "three");
  f.run();
  CHECK(f.client->reply(3) == bulk("three"));

  const auto stats = f.stats();
  CHECK(stats.origin_queued == 0);
  CHECK(stats.origin_in_flight == 0);
  CHECK(stats.waiters_overflowed == 0);
  CHECK(rejected(stats, QueueRejection::full) == 0);
  const auto waits = f.runtime->policies()->stats[0]->queue_waits();
  CHECK(waits.count == 2);
  CHECK(waits.sum_seconds >= 0.04);  // p:2 waited the 40 ms the manual clock moved
  // Every key was cached by its one fetch.
  for (const auto* key : {"p:1", "p:2", "p:3"}) {
    CHECK(f.runtime->store().peek({key, "GET"}, f.clock.now()));
  }
}

TEST_CASE("a full origin queue gives on_overflow at once", "[origin_queue]") {
  SECTION("error") {
    Fixture f({capped(1, 1)});
    REQUIRE(f.get("p:1", 1));
    REQUIRE(f.get("p:2", 2));  // queued
    REQUIRE(f.get("p:3", 3));  // the queue is full
    f.run();
    CHECK(f.client->reply(3) ==
          "-ERR corral: origin concurrency limit reached for policy 'p:' (max_origin_concurrency "
          "1) and its queue is full (max_origin_queue 1)\r\n");
    CHECK(rejected(f.stats(), QueueRejection::full) == 1);
    CHECK(f.stats().waiters_overflowed == 1);
    CHECK(f.origin().calls() == 1);
    CHECK_FALSE(f.client->has(2));
  }
  SECTION("passthrough reads the origin uncached") {
    auto p = capped(1, 1);
    p.on_overflow = config::OnOverflow::passthrough;
    Fixture f({p});
    REQUIRE(f.get("p:1", 1));
    REQUIRE(f.get("p:2", 2));
    REQUIRE(f.get("p:3", 3));
    f.run();
    REQUIRE(f.origin().calls() == 2);  // p:1's fetch and p:3's uncached read
    CHECK(f.origin().argv(1) == std::vector<std::string>{"GET", "p:3"});
    f.origin().value(1, "direct");
    f.run();
    CHECK(f.client->reply(3) == bulk("direct"));
    CHECK_FALSE(f.runtime->store().peek({"p:3", "GET"}, f.clock.now()));
  }
  SECTION("stale serves the stale-if-error copy") {
    auto p = capped(1, 0);
    p.on_overflow = config::OnOverflow::stale;
    p.stale_if_error = 1h;
    Fixture f({p});
    REQUIRE(f.get("p:old", 1));
    f.origin().value(0, "old");
    f.run();
    f.clock.advance(11s);      // past the ttl: only good on error or overflow
    REQUIRE(f.get("p:1", 2));  // holds the slot
    REQUIRE(f.get("p:old", 3));
    f.run();
    CHECK(f.client->reply(3) == bulk("old"));
    CHECK(f.origin().calls() == 2);
  }
}

TEST_CASE("a fetch that waits origin_queue_timeout for a slot gives on_overflow",
          "[origin_queue]") {
  auto p = capped(1, 10);
  p.origin_queue_timeout = 30ms;
  Fixture f({p});
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.get("p:2", 2));
  REQUIRE(f.get("p:2", 3));
  f.run_for(100ms);
  const auto expected =
      "-ERR corral: origin concurrency limit reached for policy 'p:' (max_origin_concurrency 1): "
      "no slot within origin_queue_timeout\r\n";
  CHECK(f.client->reply(2) == expected);
  CHECK(f.client->reply(3) == expected);
  CHECK(rejected(f.stats(), QueueRejection::timeout) == 1);
  CHECK(f.stats().origin_queued == 0);
  // The withdrawn fetch never starts; the slot goes back to the policy.
  f.origin().value(0, "one");
  f.run();
  CHECK(f.origin().calls() == 1);
  CHECK(f.stats().origin_in_flight == 0);
  REQUIRE(f.get("p:2", 4));  // a new miss leads a new flight
  CHECK(f.origin().calls() == 2);
}

TEST_CASE("a background refresh past the cap is skipped, not queued", "[origin_queue]") {
  auto p = capped(1, 10);
  p.grace = 1h;
  Fixture f({p});
  REQUIRE(f.get("p:stale", 1));
  f.origin().value(0, "old");
  f.run();
  f.clock.advance(11s);
  REQUIRE(f.get("p:1", 2));  // holds the slot
  REQUIRE(f.get("p:stale", 3));
  CHECK(f.client->reply(3) == bulk("old"));
  CHECK(f.stats().origin_queued == 0);
  CHECK(rejected(f.stats(), QueueRejection::full) == 0);
  f.origin().value(1, "v");
  f.run();
  CHECK(f.origin().calls() == 2);  // the refresh did not start later either
}

TEST_CASE("an MGET batch waits for its slot and serves its keys", "[origin_queue]") {
  Fixture f({capped(1, 10)});
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.read({"MGET", "p:a", "p:b"}, 2, f.client));
  f.run();
  CHECK(f.origin().calls() == 1);
  f.origin().value(0, "one");
  f.run();
  REQUIRE(f.origin().calls() == 2);
  CHECK(f.origin().argv(1) == std::vector<std::string>{"MGET", "p:a", "p:b"});
  f.origin().answer(1, origin::Outcome::value, "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  f.run();
  CHECK(f.client->reply(2) == "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  CHECK(f.stats().origin_in_flight == 0);
}

TEST_CASE("an MGET batch over two capped policies takes both slots, one after the other",
          "[origin_queue]") {
  auto q = capped(1, 10);
  q.prefix = "q:";
  Fixture f({capped(1, 10), q});
  REQUIRE(f.get("p:1", 1));  // holds p:'s slot
  REQUIRE(f.get("q:1", 2));  // holds q:'s slot
  REQUIRE(f.read({"MGET", "p:a", "q:a"}, 3, f.client));
  f.run();
  CHECK(f.origin().calls() == 2);
  CHECK(f.stats("p:").origin_queued + f.stats("q:").origin_queued == 1);  // one queue at a time
  f.origin().value(0, "p1");
  f.origin().value(1, "q1");
  f.run();
  REQUIRE(f.origin().calls() == 3);
  CHECK(f.origin().argv(2) == std::vector<std::string>{"MGET", "p:a", "q:a"});
  CHECK(f.stats("p:").origin_in_flight == 1);
  CHECK(f.stats("q:").origin_in_flight == 1);
  f.origin().answer(2, origin::Outcome::value, "*2\r\n$2\r\npa\r\n$2\r\nqa\r\n");
  f.run();
  CHECK(f.client->reply(3) == "*2\r\n$2\r\npa\r\n$2\r\nqa\r\n");
  CHECK(f.stats("p:").origin_in_flight == 0);
  CHECK(f.stats("q:").origin_in_flight == 0);
}
