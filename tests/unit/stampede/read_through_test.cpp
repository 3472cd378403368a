// Read-through basics: which requests are cached, hits and misses, coalescing of concurrent
// misses, and the bounds on waiters (max_waiters, wait_timeout) per on_overflow.
#include "engine_support.hpp"

using namespace corral;
using namespace corral::test;
using stampede::LookupOutcome;

TEST_CASE("only policy keys of configured commands are taken", "[read_through]") {
  Fixture f;
  CHECK_FALSE(f.get("other:1", 1));
  CHECK_FALSE(f.read({"HGETALL", "p:1"}, 2, f.client));        // not in the policy's commands
  CHECK_FALSE(f.read({"EXISTS", "p:1", "p:2"}, 3, f.client));  // a count over several keys
  CHECK_FALSE(f.read({"MGET", "a", "b"}, 4, f.client));        // no key under a policy
  CHECK_FALSE(f.read({"SCAN", "0"}, 5, f.client));
  CHECK(f.read({"exists", "p:1"}, 6, f.client));
  CHECK(f.origin().calls() == 1);
  CHECK(f.origin().argv(0) == std::vector<std::string>{"exists", "p:1"});
}

TEST_CASE("a miss fetches once and stores; the next read is a hit", "[read_through]") {
  Fixture f;
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.origin().calls() == 1);
  CHECK(f.origin().argv(0) == std::vector<std::string>{"GET", "p:1"});
  f.run();
  CHECK_FALSE(f.client->has(1));
  f.origin().value(0, "v1");
  f.run();
  CHECK(f.client->reply(1) == bulk("v1"));

  REQUIRE(f.get("p:1", 2));
  CHECK(f.client->reply(2) == bulk("v1"));  // answered at once, from the cache
  CHECK(f.origin().calls() == 1);
  const auto entry = f.runtime->store().peek({"p:1", "GET"}, f.clock.now());
  REQUIRE(entry);
  CHECK(entry->delta == std::chrono::milliseconds(100));  // the fetch's measured duration
  const auto stats = f.stats();
  CHECK(stats.lookup(LookupOutcome::miss) == 1);
  CHECK(stats.lookup(LookupOutcome::hit) == 1);
  CHECK(stats.origin_requests == 1);
}

TEST_CASE("variants of one key are cached apart", "[read_through]") {
  Fixture f;
  REQUIRE(f.read({"HGET", "p:h", "a"}, 1, f.client));
  REQUIRE(f.read({"HGET", "p:h", "b"}, 2, f.client));
  REQUIRE(f.origin().calls() == 2);
  f.origin().value(0, "A");
  f.origin().value(1, "B");
  f.run();
  CHECK(f.client->reply(1) == bulk("A"));
  CHECK(f.client->reply(2) == bulk("B"));
  REQUIRE(f.read({"HGET", "p:h", "b"}, 3, f.client));
  CHECK(f.client->reply(3) == bulk("B"));
  CHECK(f.runtime->store().peek({"p:h", std::string("HGET\0a", 6)}, f.clock.now()));
}

TEST_CASE("concurrent misses of one key make one fetch; every waiter gets it", "[coalescing]") {
  Fixture f;
  constexpr int kClients = 50;
  for (int i = 1; i <= kClients; ++i) REQUIRE(f.get("p:hot", i));
  CHECK(f.origin().calls() == 1);
  f.origin().value(0, "v");
  f.run();
  for (int i = 1; i <= kClients; ++i) CHECK(f.client->reply(i) == bulk("v"));
  const auto stats = f.stats();
  CHECK(stats.lookup(LookupOutcome::miss) == 1);
  CHECK(stats.lookup(LookupOutcome::coalesced) == kClients - 1);
  CHECK(stats.stampede_blocked == kClients - 1);
  CHECK(stats.origin_requests == 1);
}

TEST_CASE("an error reply is delivered, not cached, and is no origin failure", "[read_through]") {
  Fixture f;
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.get("p:1", 2));
  f.origin().answer(0, origin::Outcome::error_reply, "-WRONGTYPE Operation against a key\r\n");
  f.run();
  CHECK(f.client->reply(1) == "-WRONGTYPE Operation against a key\r\n");
  CHECK(f.client->reply(2) == "-WRONGTYPE Operation against a key\r\n");
  CHECK_FALSE(f.runtime->store().peek({"p:1", "GET"}, f.clock.now()));
  CHECK(f.stats().origin_errors == 0);
  REQUIRE(f.get("p:1", 3));
  CHECK(f.origin().calls() == 2);
}

TEST_CASE("waiters beyond max_waiters get on_overflow", "[coalescing]") {
  auto p = policy();
  p.max_waiters = 2;
  SECTION("error") {
    p.on_overflow = config::OnOverflow::error;
    Fixture f({p});
    for (int i = 1; i <= 3; ++i) REQUIRE(f.get("p:1", i));  // the leader and two followers
    REQUIRE(f.get("p:1", 4));
    CHECK(f.client->reply(4).starts_with("-ERR corral: too many requests waiting"));
    CHECK(f.stats().waiters_overflowed == 1);
    f.origin().value(0, "v");
    f.run();
    for (int i = 1; i <= 3; ++i) CHECK(f.client->reply(i) == bulk("v"));
  }
  SECTION("stale serves the copy that is left") {
    p.on_overflow = config::OnOverflow::stale;
    p.stale_if_error = 60s;
    Fixture f({p});
    REQUIRE(f.get("p:1", 1));
    f.origin().value(0, "old");
    f.run();
    f.clock.advance(11s);  // past the TTL (no grace): usable only as stale-if-error
    for (int i = 2; i <= 4; ++i) REQUIRE(f.get("p:1", i));
    REQUIRE(f.get("p:1", 5));
    CHECK(f.client->reply(5) == bulk("old"));
    CHECK(f.origin().calls() == 2);
  }
  SECTION("stale without a copy fails") {
    Fixture f({p});
    for (int i = 1; i <= 4; ++i) REQUIRE(f.get("p:1", i));
    CHECK(f.client->reply(4).starts_with("-ERR corral:"));
  }
  SECTION("passthrough hands the read back to the dispatcher") {
    p.on_overflow = config::OnOverflow::passthrough;
    Fixture f({p});
    for (int i = 1; i <= 3; ++i) REQUIRE(f.get("p:1", i));
    CHECK_FALSE(f.get("p:1", 4));
    CHECK(f.origin().calls() == 1);
  }
}

TEST_CASE("a waiter gives up after wait_timeout; the fetch goes on", "[coalescing]") {
  auto p = policy();
  p.wait_timeout = 30ms;
  SECTION("error") {
    p.on_overflow = config::OnOverflow::error;
    Fixture f({p});
    REQUIRE(f.get("p:1", 1));
    REQUIRE(f.get("p:1", 2));
    f.run_for(100ms);
    CHECK(f.client->reply(1).starts_with("-ERR corral: timed out waiting for the origin"));
    CHECK(f.client->reply(2).starts_with("-ERR corral: timed out"));
    CHECK(f.stats().waiters_timed_out == 2);
    // The flight still ends: its value is stored, and a new request finds it.
    f.origin().value(0, "late");
    f.run();
    CHECK(f.client->count() == 2);
    REQUIRE(f.get("p:1", 3));
    CHECK(f.client->reply(3) == bulk("late"));
  }
  SECTION("passthrough reads the origin directly") {
    p.on_overflow = config::OnOverflow::passthrough;
    Fixture f({p});
    REQUIRE(f.get("p:1", 1));
    REQUIRE(f.get("p:1", 2));
    f.run_for(100ms);
    REQUIRE(f.origin().calls() == 3);  // the flight and one uncached read per waiter
    f.origin().value(1, "direct");
    f.origin().value(2, "direct");
    f.run();
    CHECK(f.client->reply(1) == bulk("direct"));
    CHECK(f.client->reply(2) == bulk("direct"));
    f.origin().value(0, "flight");
    f.run();
    CHECK(f.client->count() == 2);
  }
  SECTION("a follower that timed out frees its place") {
    p.max_waiters = 1;
    p.on_overflow = config::OnOverflow::error;
    Fixture f({p});
    REQUIRE(f.get("p:1", 1));
    REQUIRE(f.get("p:1", 2));
    f.run_for(100ms);
    REQUIRE(f.get("p:1", 3));  // joins instead of overflowing
    CHECK_FALSE(f.client->has(3));
    f.origin().value(0, "v");
    f.run();
    CHECK(f.client->reply(3) == bulk("v"));
  }
}

TEST_CASE("a client gone before the fetch ends does not stop it", "[read_through]") {
  Fixture f;
  {
    auto client = std::make_shared<Recorder>();
    REQUIRE(f.read({"GET", "p:1"}, 1, client));
  }
  f.origin().value(0, "v");
  f.run();
  const auto entry = f.runtime->store().peek({"p:1", "GET"}, f.clock.now());
  REQUIRE(entry);
  CHECK(entry->value == bulk("v"));
}
