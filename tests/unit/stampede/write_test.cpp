// Invalidation by writes through Corral: entries dropped when the write is sent and again when
// Redis answers, reads bypassing the cache while the write is in flight, and fill tickets
// keeping a value fetched before the write out of the cache.
#include "engine_support.hpp"

using namespace corral;
using namespace corral::test;
using stampede::InvalidationSource;

namespace {
void prime(Fixture& f, std::vector<std::string_view> argv, std::string_view value) {
  const auto call = f.origin().calls();
  REQUIRE(f.read(argv, 1000 + call, f.client));
  REQUIRE(f.origin().calls() == call + 1);
  f.origin().value(call, value);
  f.run();
}
}  // namespace

TEST_CASE("a write drops every variant of its keys when sent and when answered", "[write]") {
  Fixture f;
  prime(f, {"GET", "p:h"}, "g");
  prime(f, {"HGET", "p:h", "field"}, "h");
  REQUIRE(f.runtime->store().entries() == 2);
  auto target = f.write({"HSET", "p:h", "field", "x"}, {1});
  CHECK(target != f.client);
  CHECK(f.runtime->store().entries() == 0);
  CHECK(f.stats().invalidation(InvalidationSource::write) == 1);

  // Something cached meanwhile (another thread's read raced the write) goes on the reply.
  const auto now = f.clock.now();
  f.runtime->store().store({"p:h", "GET"}, cache::Entry::make(bulk("racy"), now, {10s}, {}, false));
  target->on_reply(7, "+OK\r\n");
  CHECK(f.client->reply(7) == "+OK\r\n");
  CHECK(f.runtime->store().entries() == 0);
}

TEST_CASE("keys outside every policy leave the write alone", "[write]") {
  Fixture f;
  CHECK(f.write({"SET", "other", "v"}, {1}) == f.client);
  CHECK(f.write({"DEL", "a", "b"}, {1, 2}) == f.client);
}

TEST_CASE("a failed write still invalidates and reports the failure", "[write]") {
  Fixture f;
  auto target = f.write({"SET", "p:1", "v"}, {1});
  f.runtime->store().store({"p:1", "GET"},
                           cache::Entry::make(bulk("racy"), f.clock.now(), {10s}, {}, false));
  target->on_failure(3, "ERR upstream connection lost");
  CHECK(f.client->reply(3) == "-ERR upstream connection lost\r\n");
  CHECK(f.runtime->store().entries() == 0);
  REQUIRE(f.get("p:1", 4));  // no longer bypassed
}

TEST_CASE("reads of a key bypass the cache while a write to it is in flight", "[write]") {
  Fixture f;
  prime(f, {"GET", "p:1"}, "old");
  auto target = f.write({"SET", "p:1", "new"}, {1});
  CHECK_FALSE(f.get("p:1", 1));  // forwarded behind the write
  CHECK_FALSE(f.read({"MGET", "p:2", "p:1"}, 2, f.client));
  CHECK(f.get("p:2", 3));
  target->on_reply(4, "+OK\r\n");
  CHECK(f.get("p:1", 5));
}

TEST_CASE("a write during a fetch keeps the fetched value out of the cache", "[write]") {
  Fixture f;
  REQUIRE(f.get("p:1", 1));  // fetch in flight
  auto target = f.write({"SET", "p:1", "new"}, {1});
  target->on_reply(2, "+OK\r\n");
  // The flight began before the write: a new reader must not take its value.
  CHECK_FALSE(f.get("p:1", 3));
  f.origin().value(0, "old");
  f.run();
  CHECK(f.client->reply(1) == bulk("old"));  // it asked before the write
  CHECK_FALSE(f.runtime->store().peek({"p:1", "GET"}, f.clock.now()));
  REQUIRE(f.get("p:1", 4));
  CHECK(f.origin().calls() == 2);
}

TEST_CASE("flush_all empties the cache", "[write]") {
  Fixture f;
  prime(f, {"GET", "p:1"}, "v");
  REQUIRE(f.get("p:2", 1));  // a fetch in flight while the flush goes
  f.node->read_through.flush_all();
  CHECK(f.runtime->store().entries() == 0);
  CHECK(f.stats().invalidation(InvalidationSource::flush) == 1);
  f.origin().value(1, "pre-flush");
  f.run();
  CHECK_FALSE(f.runtime->store().peek({"p:2", "GET"}, f.clock.now()));
}
