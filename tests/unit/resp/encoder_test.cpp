// Encoder: exact bytes for every value type, and append_command checked against hiredis's
// redisFormatCommandArgv on random binary arguments.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "resp_test_util.hpp"

namespace corral::resp {
namespace {

template <typename F>
std::string encoded(F&& append) {
  std::string out = "prefix";
  append(out);
  REQUIRE(out.substr(0, 6) == "prefix");  // appends, never overwrites
  return out.substr(6);
}

std::string hiredis_format(const std::vector<std::string>& args) {
  std::vector<const char*> pointers;
  std::vector<std::size_t> sizes;
  for (const auto& arg : args) {
    pointers.push_back(arg.data());
    sizes.push_back(arg.size());
  }
  char* target = nullptr;
  const int size =
      redisFormatCommandArgv(&target, static_cast<int>(args.size()), pointers.data(), sizes.data());
  REQUIRE(size > 0);
  std::string out(target, static_cast<std::size_t>(size));
  std::free(target);
  return out;
}

TEST_CASE("encoder writes each RESP2 type", "[encoder]") {
  CHECK(encoded([](auto& o) { append_simple(o, "OK"); }) == "+OK\r\n");
  CHECK(encoded([](auto& o) { append_error(o, "ERR no"); }) == "-ERR no\r\n");
  CHECK(encoded([](auto& o) { append_integer(o, 0); }) == ":0\r\n");
  CHECK(encoded([](auto& o) { append_integer(o, -7); }) == ":-7\r\n");
  CHECK(encoded([](auto& o) { append_integer(o, INT64_MIN); }) == ":-9223372036854775808\r\n");
  CHECK(encoded([](auto& o) { append_integer(o, INT64_MAX); }) == ":9223372036854775807\r\n");
  CHECK(encoded([](auto& o) { append_bulk(o, ""); }) == "$0\r\n\r\n");
  CHECK(encoded([](auto& o) { append_bulk(o, std::string_view("a\0\r\n", 4)); }) ==
        std::string("$4\r\na\0\r\n\r\n", 10));
  CHECK(encoded([](auto& o) { append_text(o, "a:1\r\n", 2); }) == "$5\r\na:1\r\n\r\n");
  CHECK(encoded([](auto& o) { append_text(o, "a:1\r\n", 3); }) == "=9\r\ntxt:a:1\r\n\r\n");
  CHECK(encoded([](auto& o) { append_text(o, "", 3); }) == "=4\r\ntxt:\r\n");
  CHECK(encoded([](auto& o) { append_null(o); }) == "$-1\r\n");
  CHECK(encoded([](auto& o) { append_null_array(o); }) == "*-1\r\n");
  CHECK(encoded([](auto& o) { append_array_header(o, 0); }) == "*0\r\n");
  CHECK(encoded([](auto& o) { append_array_header(o, SIZE_MAX); }) == "*18446744073709551615\r\n");
  const std::vector<std::string_view> argv{"GET", "key"};
  CHECK(encoded([&](auto& o) { append_command(o, argv); }) == "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n");
  CHECK(encoded([](auto& o) { append_command(o, {}); }) == "*0\r\n");
  CHECK(encoded([](auto& o) { append_field(o, "state", "fresh"); }) ==
        "$5\r\nstate\r\n$5\r\nfresh\r\n");
  CHECK(encoded([](auto& o) { append_field(o, "hits", std::int64_t{-3}); }) ==
        "$4\r\nhits\r\n:-3\r\n");
}

TEST_CASE("append_command matches hiredis", "[encoder][hiredis]") {
  test::Rng rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::string> args(test::pick(rng, 12) + 1);
    for (auto& arg : args) arg = test::random_string(rng, test::binary_alphabet());
    const std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    append_command(out, views);
    REQUIRE(out == hiredis_format(args));
  }
}

TEST_CASE("append_reply writes what decode_reply reads", "[encoder][reply]") {
  test::Rng rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes;
    const Reply reply = test::random_reply(rng, bytes, 6);
    std::string out;
    append_reply(out, reply);
    REQUIRE(decode_reply(out) == reply);
    // Only null arrays change on the way back: they come out as null bulks.
    if (bytes.find("*-1\r\n") == std::string::npos) REQUIRE(out == bytes);
  }
}

}  // namespace
}  // namespace corral::resp
