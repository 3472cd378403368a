// array_elements: element boundaries of array replies, and every malformed shape refused.
#include <catch2/catch.hpp>

#include "resp/array_elements.hpp"
#include "resp/ascii.hpp"

using corral::resp::array_elements;

TEST_CASE("array_elements splits an array into its replies") {
  const auto elements = array_elements("*3\r\n$1\r\na\r\n$-1\r\n*1\r\n:5\r\n");
  REQUIRE(elements);
  REQUIRE(elements->size() == 3);
  CHECK((*elements)[0] == "$1\r\na\r\n");
  CHECK((*elements)[1] == "$-1\r\n");
  CHECK((*elements)[2] == "*1\r\n:5\r\n");
  CHECK(array_elements("*0\r\n")->empty());
}

TEST_CASE("array_elements checks the expected count") {
  CHECK(array_elements("*1\r\n:1\r\n", 1));
  CHECK_FALSE(array_elements("*1\r\n:1\r\n", 2));
}

TEST_CASE("array_elements refuses what is not exactly one array") {
  CHECK_FALSE(array_elements(""));
  CHECK_FALSE(array_elements("$1\r\na\r\n"));
  CHECK_FALSE(array_elements("*x\r\n"));
  CHECK_FALSE(array_elements("*2\r\n:1\r\n"));            // too few elements
  CHECK_FALSE(array_elements("*1\r\n:1\r\n:2\r\n"));      // bytes after the array
  CHECK_FALSE(array_elements("*99999999999\r\n:1\r\n"));  // count far beyond the bytes
}

TEST_CASE("iequals and istarts_with ignore ASCII case only") {
  using corral::resp::iequals;
  using corral::resp::istarts_with;
  CHECK(iequals("GeT", "get"));
  CHECK_FALSE(iequals("get", "gets"));
  CHECK_FALSE(iequals("\xc3\x89", "\xc3\xa9"));  // no locale folding of UTF-8
  CHECK(istarts_with("HTTP://x", "http://"));
  CHECK_FALSE(istarts_with("htt", "http://"));
}
