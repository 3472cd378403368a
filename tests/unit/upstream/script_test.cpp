// The EVAL form that the NOSCRIPT fallback sends: the same keys and arguments as the EVALSHA.
#include <catch2/catch.hpp>

#include "resp/encoder.hpp"
#include "upstream/script.hpp"

using namespace corral;

namespace {
std::string encode(std::initializer_list<std::string_view> argv) {
  std::string out;
  resp::append_command(out, std::vector<std::string_view>(argv));
  return out;
}
}  // namespace

TEST_CASE("a NOSCRIPT retry sends the source with the same keys and arguments", "[script]") {
  const upstream::Script script("return {KEYS[1], ARGV[1]}");
  const std::string digest(40, 'a');
  const auto evalsha = encode({"EVALSHA", digest, "2", "k1", "k2", "a1", ""});
  CHECK(script.as_eval(evalsha) ==
        encode({"EVAL", "return {KEYS[1], ARGV[1]}", "2", "k1", "k2", "a1", ""}));
  CHECK(script.as_eval(encode({"EVALSHA", digest, "0"})) ==
        encode({"EVAL", "return {KEYS[1], ARGV[1]}", "0"}));
}
