// Fleet mode's companion keys (same cluster slot as the user key) and the decoding of the shared
// state that read_script returns.
#include <catch2/catch.hpp>

#include "stampede/fleet/fleet_scripts.hpp"
#include "upstream/cluster/hash_tag.hpp"

using namespace corral;
using namespace std::chrono_literals;

TEST_CASE("hash tags follow Redis Cluster's rule", "[fleet]") {
  CHECK(upstream::hash_tag("feat:U1") == "feat:U1");
  CHECK(upstream::hash_tag("feat:{U1}:prefs") == "U1");
  CHECK(upstream::hash_tag("{}feat") == "{}feat");  // an empty tag does not count
  CHECK(upstream::hash_tag("a{b") == "a{b");
  CHECK(upstream::hash_tag("a{b}{c}") == "b");  // the first one wins
  CHECK(upstream::hash_tag("a}b{c}") == "c");
}

TEST_CASE("companion keys hash like their user key", "[fleet]") {
  const auto plain = upstream::companion_key("feat:U1", "corral:shadow");
  CHECK(plain == "{feat:U1}:corral:shadow");
  CHECK(upstream::hash_tag(plain) == "feat:U1");
  const auto tagged = upstream::companion_key("feat:{U1}:prefs", "corral:lock");
  CHECK(tagged == "feat:{U1}:prefs:corral:lock");
  CHECK(upstream::hash_tag(tagged) == upstream::hash_tag("feat:{U1}:prefs"));

  const stampede::fleet::FleetKeys keys("user:{42}");
  CHECK(keys.plain == "user:{42}");
  CHECK(upstream::hash_tag(keys.shadow) == "42");
  CHECK(upstream::hash_tag(keys.lock) == "42");
}

namespace {
// now, value, stored, delta, soft, nil, shadow_pttl, plain_exists, lock_pttl
std::string state_reply(std::string_view value, long soft, long shadow_pttl, long plain_exists,
                        long lock_pttl, std::string_view nil = "0") {
  std::string out = "*9\r\n:100000\r\n";
  if (value == "<none>") {
    out += "$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n";
  } else {
    out += "$" + std::to_string(value.size()) + "\r\n" + std::string(value) + "\r\n";
    out += "$5\r\n99000\r\n$3\r\n200\r\n";
    const auto soft_text = std::to_string(soft);
    out += "$" + std::to_string(soft_text.size()) + "\r\n" + soft_text + "\r\n";
    out += "$1\r\n" + std::string(nil) + "\r\n";
  }
  out += ":" + std::to_string(shadow_pttl) + "\r\n:" + std::to_string(plain_exists) +
         "\r\n:" + std::to_string(lock_pttl) + "\r\n";
  return out;
}
}  // namespace

TEST_CASE("the shared state: fresh, stale, absent, nil", "[fleet]") {
  using stampede::fleet::parse_state;
  const auto fresh = parse_state(state_reply("hello", 100700, 30700, 1, -2));
  REQUIRE(fresh);
  CHECK(fresh->fresh());
  CHECK(fresh->value == "hello");
  CHECK(fresh->fresh_for == 700ms);
  CHECK(fresh->shadow_for == 30700ms);
  CHECK(fresh->delta == 200ms);
  CHECK(fresh->stored_ms == 99000);
  CHECK(fresh->lock_for == 0ms);

  const auto expired = parse_state(state_reply("hello", 99900, 29900, 0, 800));
  REQUIRE(expired);
  CHECK_FALSE(expired->fresh());
  CHECK(expired->has_value);
  CHECK(expired->lock_for == 800ms);

  // The plain key deleted by a client before its expiry: its value must not come back.
  const auto deleted = parse_state(state_reply("hello", 100700, 30700, 0, -2));
  REQUIRE(deleted);
  CHECK_FALSE(deleted->fresh());
  CHECK_FALSE(deleted->has_value);
  CHECK(deleted->deleted);
  // Expired by its PX a moment ago: still the stale copy for grace.
  const auto just_expired = parse_state(state_reply("hello", 100002, 30002, 0, -2));
  REQUIRE(just_expired);
  CHECK(just_expired->has_value);
  CHECK_FALSE(just_expired->fresh());

  const auto absent = parse_state(state_reply("<none>", 0, -2, 0, -2));
  REQUIRE(absent);
  CHECK_FALSE(absent->has_value);
  CHECK(absent->shadow_for == 0ms);

  const auto nil = parse_state(state_reply("", 100500, 500, 0, -2, "1"));
  REQUIRE(nil);
  CHECK(nil->nil);
  CHECK(nil->fresh());  // a cached "not found" has no plain key
}

TEST_CASE("garbage instead of the shared state is refused", "[fleet]") {
  using stampede::fleet::parse_state;
  CHECK_FALSE(parse_state("-ERR boom\r\n"));
  CHECK_FALSE(parse_state("*2\r\n:1\r\n:2\r\n"));
  CHECK_FALSE(parse_state("*9\r\n:1\r\n"));
  CHECK_FALSE(parse_state(""));
}

TEST_CASE("the shared state carries the validators of the value when there are any", "[fleet]") {
  using stampede::fleet::parse_state;
  const auto without = state_reply("hello", 100700, 30700, 1, -2);
  std::string with = "*10" + without.substr(2) + "$5\r\n\"e1\"\n\r\n";
  const auto state = parse_state(with);
  REQUIRE(state);
  CHECK(state->validators == "\"e1\"\n");
  CHECK(state->value == "hello");
  std::string none = "*10" + without.substr(2) + "$-1\r\n";  // a shadow stored without any
  REQUIRE(parse_state(none));
  CHECK(parse_state(none)->validators.empty());
  CHECK(parse_state(without)->validators.empty());  // nine elements: no validators read
}

TEST_CASE("a shared copy's tags and their purge counts round-trip", "[fleet]") {
  using stampede::fleet::decode_tags;
  using stampede::fleet::encode_tags;
  const auto text = encode_tags({{"team-red", 3}, {"a:b", 0}});
  CHECK(text == "team-red 3\na:b 0\n");
  const auto back = decode_tags(text);
  REQUIRE(back.size() == 2);
  CHECK(back[0].tag == "team-red");
  CHECK(back[0].count == 3);
  CHECK(back[1].tag == "a:b");
  CHECK(back[1].count == 0);
  CHECK(decode_tags("no-count\nx y\nok 7").size() == 1);  // malformed lines are skipped
  CHECK(decode_tags("").empty());

  const auto without = state_reply("hello", 100700, 30700, 1, -2);
  const std::string with = "*11" + without.substr(2) + "$-1\r\n$5\r\nred 2\r\n";
  const auto state = stampede::fleet::parse_state(with);
  REQUIRE(state);
  REQUIRE(state->tags.size() == 1);
  CHECK(state->tags[0].tag == "red");
  CHECK(state->tags[0].count == 2);
}

TEST_CASE("a shared copy's own windows decide how long every process serves it", "[fleet]") {
  using stampede::fleet::copy_windows;
  using stampede::fleet::CopyWindows;
  using stampede::fleet::parse_state;
  using stampede::fleet::usable_for;
  CHECK(stampede::fleet::encode_windows({5000ms, 60000ms}) == "5000 60000");

  // Written with stale-while-revalidate 5 s and stale-if-error 60 s over a policy of 1 s / 2 s:
  // the shadow lives fresh + 60 s, 700 ms of freshness left.
  const auto without = state_reply("hello", 100700, 60700, 1, -2);
  const std::string with = "*12" + without.substr(2) + "$-1\r\n$-1\r\n$10\r\n5000 60000\r\n";
  const auto state = parse_state(with);
  REQUIRE(state);
  REQUIRE(state->windows);
  const CopyWindows policy{1000ms, 2000ms};
  const auto own = copy_windows(*state, policy);
  CHECK(own.grace == 5000ms);
  CHECK(own.stale_if_error == 60000ms);
  CHECK(usable_for(*state, own) == 5700ms);  // fresh 700 ms, then its own 5 s of grace

  // Stale for 3 s (shadow: 57 s of its 60 s left): 2 s of the copy's grace remain; with the
  // policy's 1 s none would.
  const auto stale = parse_state("*12" + state_reply("hello", 97000, 57000, 0, -2).substr(2) +
                                 "$-1\r\n$-1\r\n$10\r\n5000 60000\r\n");
  REQUIRE(stale);
  CHECK(usable_for(*stale, copy_windows(*stale, policy)) == 2000ms);

  // no-cache was written as grace 0: not served once stale, whatever the policy says.
  const auto no_cache = parse_state("*12" + state_reply("hello", 99900, 1900, 0, -2).substr(2) +
                                    "$-1\r\n$-1\r\n$6\r\n0 2000\r\n");
  REQUIRE(no_cache);
  CHECK(usable_for(*no_cache, copy_windows(*no_cache, policy)) == 0ms);

  // Nothing recorded (an older writer) or garbage: the policy's windows.
  const auto older = parse_state(without);
  REQUIRE(older);
  CHECK_FALSE(older->windows);
  CHECK(copy_windows(*older, policy).grace == 1000ms);
  const auto garbled = parse_state("*12" + without.substr(2) + "$-1\r\n$-1\r\n$3\r\nx y\r\n");
  REQUIRE(garbled);
  CHECK_FALSE(garbled->windows);
  // A cached "not found" has no grace, even when one was recorded.
  const auto nil = parse_state("*12" + state_reply("", 100500, 500, 0, -2, "1").substr(2) +
                               "$-1\r\n$-1\r\n$10\r\n5000 60000\r\n");
  REQUIRE(nil);
  CHECK(copy_windows(*nil, policy).grace == 0ms);
}
