// Tests of the naming of versioned keys: version numbers, the ":v<N>" suffix and the SCAN
// pattern CORRAL.PURGE deletes with.
#include <catch2/catch.hpp>

#include "stampede/versioned/version_key.hpp"

using namespace corral::stampede;

TEST_CASE("versions are plain decimal numbers", "[versioned]") {
  CHECK(parse_version("0") == 0u);
  CHECK(parse_version("7") == 7u);
  CHECK(parse_version("18446744073709551615") == 18446744073709551615ull);
  for (const char* bad :
       {"", "-1", "+1", "007", " 1", "1 ", "1x", "v1", "1.0", "18446744073709551616"}) {
    INFO(bad);
    CHECK_FALSE(parse_version(bad));
  }
}

TEST_CASE("a versioned key is the user key with :v<N>", "[versioned]") {
  CHECK(versioned_key("feat:U1", 3) == "feat:U1:v3");
  CHECK(versioned_key("", 12) == ":v12");

  const auto split = split_versioned_key("feat:U1:v12");
  REQUIRE(split);
  CHECK(split->user_key == "feat:U1");
  CHECK(split->version == 12u);

  // The last ":v" counts: a user key may itself contain one.
  const auto nested = split_versioned_key("feat:a:v2:v3");
  REQUIRE(nested);
  CHECK(nested->user_key == "feat:a:v2");
  CHECK(nested->version == 3u);

  for (const char* plain :
       {"feat:U1", "feat:U1:v", "feat:U1:vx", "feat:U1:v01", ":v3", "feat:U1:V3", "feat:U1v3"}) {
    INFO(plain);
    CHECK_FALSE(split_versioned_key(plain));
  }
}

TEST_CASE("naming and splitting round-trip", "[versioned]") {
  for (std::uint64_t version : {1ull, 9ull, 10ull, 4294967296ull}) {
    const auto key = versioned_key("user:{42}:x", version);
    const auto split = split_versioned_key(key);
    REQUIRE(split);
    CHECK(split->user_key == "user:{42}:x");
    CHECK(split->version == version);
  }
}

TEST_CASE("glob characters of a prefix are escaped for SCAN MATCH", "[versioned]") {
  CHECK(glob_escape("feat:") == "feat:");
  CHECK(glob_escape("a*b?c[d]e\\f") == "a\\*b\\?c\\[d\\]e\\\\f");
  CHECK(glob_escape("") == "");
  CHECK(version_pattern("feat:", 3) == "feat:*:v3");
  CHECK(version_pattern("we*rd[", 12) == "we\\*rd\\[*:v12");
}
