// The http origin's reply mapping: which commands it serves, and the RESP reply for a 200 body
// or a 404, with Redis's GETRANGE semantics.
#include "origin/http_reply.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace {

using namespace corral::origin;

std::optional<StringRequest> parse(std::vector<std::string_view> argv, std::string& error) {
  return parse_string_request(argv, error);
}

std::string reply_for(std::vector<std::string_view> argv, std::string_view body) {
  std::string error;
  auto request = parse(std::move(argv), error);
  REQUIRE(request);
  return found_reply(*request, body);
}

std::string nil_for(std::vector<std::string_view> argv) {
  std::string error;
  auto request = parse(std::move(argv), error);
  REQUIRE(request);
  return std::string(not_found_reply(*request));
}

TEST_CASE("the string commands are recognised in any case") {
  std::string error;
  auto get = parse({"get", "feat:a"}, error);
  REQUIRE(get);
  CHECK(get->command == StringCommand::get);
  CHECK(get->key == "feat:a");
  CHECK(parse({"Exists", "k"}, error)->command == StringCommand::exists);
  CHECK(parse({"STRLEN", "k"}, error)->command == StringCommand::strlen);
  auto range = parse({"getRange", "k", "-3", "10"}, error);
  REQUIRE(range);
  CHECK(range->command == StringCommand::getrange);
  CHECK(range->start == -3);
  CHECK(range->end == 10);
  CHECK(error.empty());
}

TEST_CASE("other commands, bad arity and bad integers get Redis-like error replies") {
  std::string error;
  CHECK_FALSE(parse({"HGET", "k", "f"}, error));
  CHECK(error ==
        "-ERR corral: an http origin cannot answer 'HGET' (GET, EXISTS, STRLEN, "
        "GETRANGE only)\r\n");
  CHECK_FALSE(parse({"GET"}, error));
  CHECK(error == "-ERR wrong number of arguments for 'get' command\r\n");
  CHECK_FALSE(parse({"EXISTS", "a", "b"}, error));
  CHECK(error == "-ERR wrong number of arguments for 'exists' command\r\n");
  CHECK_FALSE(parse({"GETRANGE", "k", "0"}, error));
  CHECK(error == "-ERR wrong number of arguments for 'getrange' command\r\n");
  for (std::string_view bad :
       {"x", "", "1.5", "+1", "99999999999999999999", " 1", "05", "-0", "-"}) {
    INFO(bad);
    CHECK_FALSE(parse({"GETRANGE", "k", bad, "1"}, error));
    CHECK(error == "-ERR value is not an integer or out of range\r\n");
  }
  CHECK_FALSE(parse({}, error));
}

TEST_CASE("a 200 body answers each command") {
  CHECK(reply_for({"GET", "k"}, "hello") == "$5\r\nhello\r\n");
  CHECK(reply_for({"GET", "k"}, "") == "$0\r\n\r\n");
  CHECK(reply_for({"GET", "k"}, std::string("a\r\n\0b", 5)) ==
        std::string("$5\r\na\r\n\0b\r\n", 11));
  CHECK(reply_for({"EXISTS", "k"}, "") == ":1\r\n");
  CHECK(reply_for({"STRLEN", "k"}, "hello") == ":5\r\n");
  CHECK(reply_for({"STRLEN", "k"}, "") == ":0\r\n");
  CHECK(reply_for({"GETRANGE", "k", "1", "3"}, "hello") == "$3\r\nell\r\n");
}

TEST_CASE("a 404 answers each command as Redis does for a missing key") {
  CHECK(nil_for({"GET", "k"}) == "$-1\r\n");
  CHECK(nil_for({"EXISTS", "k"}) == ":0\r\n");
  CHECK(nil_for({"STRLEN", "k"}) == ":0\r\n");
  CHECK(nil_for({"GETRANGE", "k", "0", "-1"}) == "$0\r\n\r\n");
}

TEST_CASE("GETRANGE follows Redis, negative indexes and quirks included") {
  // Expected values checked against redis-server 7 (SET k "This is a string").
  const std::string_view s = "This is a string";
  CHECK(getrange(s, 0, 3) == "This");
  CHECK(getrange(s, -3, -1) == "ing");
  CHECK(getrange(s, 0, -1) == s);
  CHECK(getrange(s, 10, 100) == "string");
  CHECK(getrange(s, 5, 3) == "");
  CHECK(getrange(s, -1, -5) == "");       // both negative, start > end
  CHECK(getrange(s, -100, 3) == "This");  // clamps to 0
  CHECK(getrange(s, -100, -100) == "T");  // both clamp to 0: one character, as Redis does
  CHECK(getrange(s, 100, 200) == "");
  CHECK(getrange(s, 15, 15) == "g");
  CHECK(getrange("", 0, -1) == "");
  CHECK(getrange("", 0, 0) == "");
  CHECK(getrange("abc", INT64_MIN, INT64_MAX) == "abc");
}

}  // namespace
