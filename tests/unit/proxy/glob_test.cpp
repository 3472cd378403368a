// Redis's glob rules (COMMAND LIST FILTERBY PATTERN): stars, ?, classes, escapes, case folding.
#include <catch2/catch.hpp>

#include "proxy/commands/glob.hpp"

using corral::proxy::glob_match;

TEST_CASE("glob: literals, stars and question marks") {
  CHECK(glob_match("acl", "acl", false));
  CHECK_FALSE(glob_match("acl", "acl|cat", false));
  CHECK(glob_match("acl*", "acl|cat", false));
  CHECK(glob_match("*", "", false));
  CHECK(glob_match("*|cat", "acl|cat", false));
  CHECK_FALSE(glob_match("*|cat", "acl|catx", false));
  CHECK(glob_match("a*b*c", "axxbyyc", false));
  CHECK_FALSE(glob_match("a*b*c", "axxbyy", false));
  CHECK(glob_match("g?t", "get", false));
  CHECK_FALSE(glob_match("g?t", "gt", false));
}

TEST_CASE("glob: classes, ranges, negation and escapes") {
  CHECK(glob_match("[gs]et", "set", false));
  CHECK_FALSE(glob_match("[gs]et", "met", false));
  CHECK(glob_match("x[a-z]*", "xadd", false));
  CHECK(glob_match("x[z-a]*", "xadd", false));  // a reversed range, as Redis reads it
  CHECK(glob_match("[^a]et", "get", false));
  CHECK_FALSE(glob_match("[^g]et", "get", false));
  CHECK(glob_match("a\\*", "a*", false));
  CHECK_FALSE(glob_match("a\\*", "ab", false));
  CHECK(glob_match("[\\]]", "]", false));
}

TEST_CASE("glob: case folding only when asked") {
  CHECK(glob_match("CORRAL.*", "corral.info", true));
  CHECK_FALSE(glob_match("CORRAL.*", "corral.info", false));
  CHECK(glob_match("[A-C]cl", "acl", true));
}
