// Tests of longest-prefix policy matching.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "stampede/core/policy_match.hpp"

using namespace corral;
using corral::stampede::PolicyMatcher;

TEST_CASE("the longest matching prefix wins", "[policy_match]") {
  const std::vector<std::string> prefixes = {"user:", "user:session:", "u", "product:"};
  const PolicyMatcher matcher(prefixes);
  CHECK(matcher.match("user:42") == 0u);
  CHECK(matcher.match("user:session:abc") == 1u);
  CHECK(matcher.match("user:session:") == 1u);
  CHECK(matcher.match("user:sess") == 0u);
  CHECK(matcher.match("ux") == 2u);
  CHECK(matcher.match("u") == 2u);
  CHECK(matcher.match("product:9") == 3u);
}

TEST_CASE("keys matching no prefix get none", "[policy_match]") {
  const std::vector<std::string> prefixes = {"feat:", "product:"};
  const PolicyMatcher matcher(prefixes);
  CHECK_FALSE(matcher.match("other"));
  CHECK_FALSE(matcher.match(""));
  CHECK_FALSE(matcher.match("feat"));  // shorter than the prefix
  CHECK_FALSE(matcher.match("fea:x"));
  CHECK_FALSE(matcher.match("Feat:x"));  // case-sensitive, like Redis keys
  CHECK_FALSE(PolicyMatcher().match("feat:1"));
}

TEST_CASE("an empty prefix is a catch-all below every other", "[policy_match]") {
  const std::vector<std::string> prefixes = {"", "a:"};
  const PolicyMatcher matcher(prefixes);
  CHECK(matcher.match("a:1") == 1u);
  CHECK(matcher.match("b:1") == 0u);
  CHECK(matcher.match("") == 0u);
}

TEST_CASE("duplicate prefixes: the first policy wins", "[policy_match]") {
  const std::vector<std::string> prefixes = {"x:", "x:"};
  CHECK(PolicyMatcher(prefixes).match("x:1") == 0u);
}

TEST_CASE("binary prefixes and keys match byte for byte", "[policy_match]") {
  using namespace std::string_literals;
  const std::vector<std::string> prefixes = {"\xff\x00p"s, "\xff"s};
  const PolicyMatcher matcher(prefixes);
  CHECK(matcher.match("\xff\x00pq"s) == 0u);
  CHECK(matcher.match("\xff\x01"s) == 1u);
  CHECK_FALSE(matcher.match("\x00"s));
}

TEST_CASE("built from policy settings, indices are policy positions", "[policy_match]") {
  std::vector<config::PolicySettings> policies(3);
  policies[0].prefix = "feat:";
  policies[1].prefix = "product:";
  policies[2].prefix = "feat:beta:";
  const PolicyMatcher matcher(policies);
  CHECK(matcher.match("feat:1") == 0u);
  CHECK(matcher.match("product:1") == 1u);
  CHECK(matcher.match("feat:beta:1") == 2u);
  // A copy is independent of the original (no views into another object's storage).
  const PolicyMatcher copy = matcher;
  CHECK(copy.match("feat:beta:1") == 2u);
}

TEST_CASE("many prefixes of many lengths", "[policy_match]") {
  std::vector<std::string> prefixes;
  for (int i = 0; i < 200; ++i) prefixes.push_back("p" + std::to_string(i) + ":");
  const PolicyMatcher matcher(prefixes);
  for (int i = 0; i < 200; ++i) {
    REQUIRE(matcher.match("p" + std::to_string(i) + ":key") == static_cast<std::size_t>(i));
  }
  CHECK_FALSE(matcher.match("p200:key"));
}
