// MGET: answered key by key from the cache; the missing keys (and keys outside every policy)
// fetched together in one MGET whose reply is split, stored per key and reassembled in order.
#include "engine_support.hpp"

using namespace corral;
using namespace corral::test;
using stampede::LookupOutcome;

namespace {
std::string array(std::initializer_list<std::string> items) {
  std::string out;
  resp::append_array_header(out, items.size());
  for (const auto& item : items) out += item;
  return out;
}

void prime(Fixture& f, std::string_view key, std::string_view value) {
  const auto call = f.origin().calls();
  REQUIRE(f.get(key, 1000 + call));
  f.origin().value(call, value);
  f.run();
}
}  // namespace

TEST_CASE("an MGET of cached keys is answered at once", "[mget]") {
  Fixture f;
  prime(f, "p:1", "a");
  prime(f, "p:2", "b");
  REQUIRE(f.read({"MGET", "p:2", "p:1", "p:2"}, 1, f.client));
  CHECK(f.client->reply(1) == array({bulk("b"), bulk("a"), bulk("b")}));
  CHECK(f.origin().calls() == 2);
  CHECK(f.stats().lookup(LookupOutcome::hit) == 3);
}

TEST_CASE("missing and uncached keys are fetched in one MGET and stored per key", "[mget]") {
  auto p = policy();
  p.negative_ttl = 10s;
  Fixture f({p});
  prime(f, "p:1", "a");
  REQUIRE(f.read({"MGET", "p:1", "p:2", "other", "p:3"}, 1, f.client));
  REQUIRE(f.origin().calls() == 2);
  CHECK(f.origin().argv(1) == std::vector<std::string>{"MGET", "p:2", "other", "p:3"});
  CHECK_FALSE(f.client->has(1));
  f.origin().answer(1, origin::Outcome::value, array({bulk("b"), bulk("o"), kNil}));
  f.run();
  CHECK(f.client->reply(1) == array({bulk("a"), bulk("b"), bulk("o"), kNil}));

  const auto now = f.clock.now();
  CHECK(f.runtime->store().peek({"p:2", "GET"}, now)->value == bulk("b"));
  CHECK(f.runtime->store().peek({"p:3", "GET"}, now)->negative);
  CHECK_FALSE(f.runtime->store().peek({"other", "GET"}, now));
  REQUIRE(f.get("p:2", 2));
  CHECK(f.client->reply(2) == bulk("b"));
  CHECK(f.stats().origin_requests == 2);
}

TEST_CASE("MGET and GET of one missing key share one fetch", "[mget]") {
  Fixture f;
  SECTION("a GET joins the key an MGET fetches") {
    REQUIRE(f.read({"MGET", "p:1", "p:2"}, 1, f.client));
    REQUIRE(f.get("p:2", 2));
    REQUIRE(f.origin().calls() == 1);
    f.origin().answer(0, origin::Outcome::value, array({bulk("a"), bulk("b")}));
    f.run();
    CHECK(f.client->reply(1) == array({bulk("a"), bulk("b")}));
    CHECK(f.client->reply(2) == bulk("b"));
  }
  SECTION("an MGET waits for the GET in flight and fetches the rest") {
    REQUIRE(f.get("p:1", 1));
    REQUIRE(f.read({"MGET", "p:1", "p:2"}, 2, f.client));
    REQUIRE(f.origin().calls() == 2);
    CHECK(f.origin().argv(1) == std::vector<std::string>{"MGET", "p:2"});
    f.origin().answer(1, origin::Outcome::value, array({bulk("b")}));
    f.run();
    CHECK_FALSE(f.client->has(2));
    f.origin().value(0, "a");
    f.run();
    CHECK(f.client->reply(2) == array({bulk("a"), bulk("b")}));
  }
}

TEST_CASE("a failed MGET fetch fails the MGET unless stale copies cover it", "[mget]") {
  auto p = policy();
  SECTION("no copies") {
    Fixture f({p});
    REQUIRE(f.read({"MGET", "p:1", "other"}, 1, f.client));
    f.origin().fail(0);
    f.run();
    CHECK(f.client->reply(1) == "-ERR upstream connection lost\r\n");
  }
  SECTION("a malformed reply is a failure") {
    Fixture f({p});
    REQUIRE(f.read({"MGET", "p:1", "p:2"}, 1, f.client));
    f.origin().answer(0, origin::Outcome::value, array({bulk("only one")}));
    f.run();
    CHECK(f.client->reply(1).starts_with("-ERR corral: unexpected MGET reply"));
  }
  SECTION("stale-if-error copies") {
    p.stale_if_error = 1h;
    Fixture f({p});
    prime(f, "p:1", "old");
    f.clock.advance(11s);
    REQUIRE(f.read({"MGET", "p:1"}, 1, f.client));
    f.origin().fail(1);
    f.run();
    CHECK(f.client->reply(1) == array({bulk("old")}));
  }
}
