// Tracking gaps: while the invalidation link covering a key is down or silent, its cached copy
// is revalidated with the origin before it is answered, and served only when the origin fails.
#include "engine_support.hpp"

using namespace corral;
using namespace corral::test;
using stampede::LookupOutcome;

namespace {
void prime(Fixture& f, std::string_view key, std::string_view value) {
  const auto call = f.origin().calls();
  REQUIRE(f.get(key, 1000 + call));
  f.origin().value(call, value);
  f.run();
}

std::uint64_t open_gap(Fixture& f, std::string prefix) {
  return f.runtime->tracking_gaps().open(
      [prefix = std::move(prefix)](std::string_view key) { return key.starts_with(prefix); });
}
}  // namespace

TEST_CASE("in a tracking gap a cached key is fetched again, not served", "[tracking_gap]") {
  Fixture f;
  prime(f, "p:1", "old");
  const auto gap = open_gap(f, "p:");
  REQUIRE(f.get("p:1", 1));
  REQUIRE(f.origin().calls() == 2);  // the fresh copy did not answer
  CHECK_FALSE(f.client->has(1));
  f.origin().value(1, "new");
  f.run();
  CHECK(f.client->reply(1) == bulk("new"));

  f.runtime->tracking_gaps().close(gap);
  REQUIRE(f.get("p:1", 2));
  CHECK(f.client->reply(2) == bulk("new"));  // a hit again once tracking is back
  CHECK(f.origin().calls() == 2);
}

TEST_CASE("a tracking gap covers only its keys", "[tracking_gap]") {
  Fixture f;
  prime(f, "p:a1", "a");
  prime(f, "p:b1", "b");
  open_gap(f, "p:a");
  REQUIRE(f.get("p:b1", 1));
  CHECK(f.client->reply(1) == bulk("b"));
  CHECK(f.origin().calls() == 2);
  REQUIRE(f.get("p:a1", 2));
  CHECK(f.origin().calls() == 3);
}

TEST_CASE("in a tracking gap an unreachable origin leaves the cached copy served",
          "[tracking_gap]") {
  Fixture f;
  prime(f, "p:1", "kept");
  open_gap(f, "p:");
  REQUIRE(f.get("p:1", 1));
  f.origin().fail(1);
  f.run();
  CHECK(f.client->reply(1) == bulk("kept"));
  CHECK(f.stats().origin_errors == 1);
}

TEST_CASE("an MGET in a tracking gap fetches the covered keys again", "[tracking_gap]") {
  Fixture f;
  prime(f, "p:1", "a");
  prime(f, "p:2", "b");
  open_gap(f, "p:");
  REQUIRE(f.read({"MGET", "p:1", "p:2"}, 1, f.client));
  REQUIRE(f.origin().calls() == 3);
  CHECK(f.origin().argv(2) == std::vector<std::string>{"MGET", "p:1", "p:2"});
  std::string reply;
  resp::append_array_header(reply, 2);
  reply += bulk("a2") + bulk("b2");
  f.origin().answer(2, origin::Outcome::value, reply);
  f.run();
  std::string want;
  resp::append_array_header(want, 2);
  want += bulk("a2") + bulk("b2");
  CHECK(f.client->reply(1) == want);
}

TEST_CASE("gaps are counted and closed by id", "[tracking_gap]") {
  stampede::TrackingGaps gaps;
  CHECK_FALSE(gaps.any());
  const auto a = gaps.open([](std::string_view key) { return key.starts_with("a"); });
  const auto b = gaps.open([](std::string_view key) { return key.starts_with("b"); });
  CHECK(gaps.size() == 2);
  CHECK(gaps.covers("a1"));
  CHECK(gaps.covers("b1"));
  CHECK_FALSE(gaps.covers("c1"));
  gaps.close(a);
  CHECK_FALSE(gaps.covers("a1"));
  CHECK(gaps.covers("b1"));
  gaps.close(b);
  CHECK_FALSE(gaps.any());
  gaps.count_silence();
  CHECK(gaps.silences() == 1);
}
