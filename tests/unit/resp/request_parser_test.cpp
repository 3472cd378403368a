// Request parser: multibulk and inline framing, Redis's quoting rules, every error, every limit,
// and incremental feeding (one byte at a time, split at every offset) that must not change the
// result.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "resp/encoder.hpp"
#include "resp/request_parser.hpp"
#include "resp_test_util.hpp"

namespace corral::resp {
namespace {

using Argv = std::vector<std::string>;

struct Parsed {
  ParseResult result;
  Argv argv;
};

Parsed parse(std::string_view input, const RequestLimits& limits = {}) {
  std::vector<std::string_view> argv;
  std::string scratch;
  Parsed parsed{parse_request(input, limits, argv, scratch), {}};
  for (const auto arg : argv) parsed.argv.emplace_back(arg);
  return parsed;
}

Argv inline_args(std::string_view line) {
  const Parsed parsed = parse(line);
  REQUIRE(parsed.result.status == ParseStatus::ok);
  CHECK(parsed.result.inline_form);
  CHECK(parsed.result.consumed == line.size());
  return parsed.argv;
}

void check_error(std::string_view input, ParseStatus status, std::string_view error,
                 const RequestLimits& limits = {}) {
  INFO("input: " << input);
  const Parsed parsed = parse(input, limits);
  CHECK(parsed.result.status == status);
  CHECK(parsed.result.error == error);
  CHECK(parsed.argv.empty());
}

// What a session sees: every complete request in order, then how the stream ended.
struct Stream {
  std::vector<Argv> requests;
  ParseStatus end = ParseStatus::need_more;
  std::string_view error;
  bool operator==(const Stream&) const = default;
};

// Feeds `input` in chunks ending at `cuts` (ascending), parsing after each chunk like a session
// that appends reads to its buffer and drops what it consumed.
Stream feed(std::string_view input, const std::vector<std::size_t>& cuts,
            const RequestLimits& limits = {}) {
  Stream stream;
  std::string buffer;
  std::vector<std::string_view> argv;
  std::string scratch;
  std::size_t fed = 0;
  for (std::size_t cut : cuts) {
    buffer.append(input.substr(fed, cut - fed));
    fed = cut;
    for (;;) {
      const ParseResult r = parse_request(buffer, limits, argv, scratch);
      if (r.status == ParseStatus::need_more) {
        REQUIRE(r.consumed == 0);
        REQUIRE(argv.empty());
        break;
      }
      if (r.status != ParseStatus::ok) {
        stream.end = r.status;
        stream.error = r.error;
        return stream;
      }
      REQUIRE(r.consumed > 0);
      REQUIRE(r.consumed <= buffer.size());
      // Empty requests (*0, blank lines) are skipped by the caller, as Redis does.
      if (!argv.empty()) stream.requests.emplace_back(argv.begin(), argv.end());
      buffer.erase(0, r.consumed);
    }
  }
  return stream;
}

Stream feed_whole(std::string_view input, const RequestLimits& limits = {}) {
  return feed(input, {input.size()}, limits);
}

Stream feed_bytewise(std::string_view input, const RequestLimits& limits = {}) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i <= input.size(); ++i) cuts.push_back(i);
  return feed(input, cuts, limits);
}

void check_every_split(std::string_view input, const Stream& expected,
                       const RequestLimits& limits = {}) {
  for (std::size_t split = 0; split <= input.size(); ++split) {
    INFO("split at " << split);
    REQUIRE(feed(input, {split, input.size()}, limits) == expected);
  }
}

// A mix of multibulk and inline requests; `expected` receives what the parser must produce.
std::string random_pipeline(test::Rng& rng, std::size_t count, std::vector<Argv>& expected,
                            std::size_t max_arg = 300) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) {
    Argv argv;
    const std::size_t argc = test::pick(rng, 5) + 1;
    const bool as_inline = test::pick(rng, 4) == 0;
    for (std::size_t j = 0; j < argc; ++j) {
      argv.push_back(as_inline ? "a" + test::random_string(rng, "abcXYZ019:_-", max_arg)
                               : test::random_string(rng, test::binary_alphabet(), max_arg));
    }
    if (as_inline) {
      for (const auto& arg : argv) out += arg + (test::pick(rng, 2) ? " " : " \t ");
      out += test::pick(rng, 2) ? "\r\n" : "\n";
    } else {
      std::vector<std::string_view> views(argv.begin(), argv.end());
      append_command(out, views);
    }
    expected.push_back(std::move(argv));
  }
  return out;
}

TEST_CASE("multibulk request", "[request]") {
  const std::string input = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n";
  const Parsed parsed = parse(input);
  CHECK(parsed.result.status == ParseStatus::ok);
  CHECK(parsed.result.consumed == input.size());
  CHECK_FALSE(parsed.result.inline_form);
  CHECK(parsed.argv == Argv{"SET", "k", "value"});
}

TEST_CASE("multibulk arguments are binary-safe slices of the input", "[request]") {
  const std::string input("*2\r\n$4\r\n\r\n\0$\r\n$0\r\n\r\nrest", 24);
  std::vector<std::string_view> argv;
  std::string scratch;
  const ParseResult r = parse_request(input, {}, argv, scratch);
  REQUIRE(r.status == ParseStatus::ok);
  CHECK(r.consumed == input.size() - 4);
  REQUIRE(argv.size() == 2);
  CHECK(argv[0] == std::string_view("\r\n\0$", 4));
  CHECK(argv[0].data() == input.data() + 8);
  CHECK(argv[1].empty());
  CHECK(scratch.empty());
}

TEST_CASE("empty requests are ok with nothing in argv", "[request]") {
  for (const std::string input :
       {"*0\r\n", "*-1\r\n", "*-5\r\n", "\r\n", "\n", "   \t\r\n", "\r\r\n", " \v\f \n"}) {
    INFO(input);
    const Parsed parsed = parse(input + "PING\r\n");
    CHECK(parsed.result.status == ParseStatus::ok);
    CHECK(parsed.result.consumed == input.size());
    CHECK(parsed.argv.empty());
  }
}

TEST_CASE("inline commands", "[request][inline]") {
  CHECK(inline_args("PING\r\n") == Argv{"PING"});
  CHECK(inline_args("PING\n") == Argv{"PING"});
  CHECK(inline_args("  SET   key\tvalue  \r\n") == Argv{"SET", "key", "value"});
  CHECK(inline_args("a\rb\n") == Argv{"a", "b"});
  CHECK(inline_args("a\vb \vc\n") == Argv{"a\vb", "c"});
  CHECK(inline_args("GET *x $y\r\n") == Argv{"GET", "*x", "$y"});
  // Only the first byte decides the form: '*' later in a line is an argument.
  const Parsed parsed = parse("GET a\r\nGET b\r\n");
  CHECK(parsed.result.consumed == 7);
  CHECK(parsed.argv == Argv{"GET", "a"});
}

TEST_CASE("inline arguments without quotes are slices of the input", "[request][inline]") {
  const std::string input = "SET k v\r\n";
  std::vector<std::string_view> argv;
  std::string scratch = "untouched";
  REQUIRE(parse_request(input, {}, argv, scratch).status == ParseStatus::ok);
  REQUIRE(argv.size() == 3);
  CHECK(argv[1].data() == input.data() + 4);
  CHECK(scratch == "untouched");
}

TEST_CASE("inline quoting follows sdssplitargs", "[request][inline]") {
  CHECK(inline_args("SET \"a b\" c\r\n") == Argv{"SET", "a b", "c"});
  CHECK(inline_args("SET 'a b' c\r\n") == Argv{"SET", "a b", "c"});
  CHECK(inline_args(R"("\n\r\t\b\a\\\"\q")"
                    "\n") == Argv{"\n\r\t\b\a\\\"q"});
  CHECK(inline_args(R"("\x41\x4a\x4B\x00z")"
                    "\n") == Argv{std::string("AJK\0z", 5)});
  CHECK(inline_args(R"("\x4" "\xZZ" "\x")"
                    "\n") == Argv{"x4", "xZZ", "x"});
  CHECK(inline_args(R"('it\'s' 'a\nb' 'x"y')"
                    "\n") == Argv{"it's", "a\\nb", "x\"y"});
  CHECK(inline_args(R"(ab"c d" e'f g')"
                    "\n") == Argv{"abc d", "ef g"});
  CHECK(inline_args("\"\" ''\n") == Argv{"", ""});
  CHECK(inline_args("\"a\"\t\"b\"\r\n") == Argv{"a", "b"});
  CHECK(inline_args("\"a\r\"\n") == Argv{"a\r"});
  CHECK(inline_args("\"a\"\r\r\n") == Argv{"a"});
  CHECK(inline_args("\"a\"\v\"b\"\n") == Argv{"a", "b"});
}

TEST_CASE("inline lines split exactly as Redis's sdssplitargs", "[request][inline][hiredis]") {
  // Few symbols, so that quotes, escapes and blanks meet in every combination.
  const std::string alphabet = "ab \t\"'\\x4Fnr\r\v\f\x80";
  test::Rng rng(31);
  int refused = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string line = test::random_string(rng, alphabet, 40);
    const auto expected = oracle::split_like_redis(line);
    const Parsed parsed = parse(line + (i % 2 ? "\r\n" : "\n"));
    INFO("line: " << line);
    if (!expected) {
      ++refused;
      REQUIRE(parsed.result.status == ParseStatus::invalid);
      continue;
    }
    REQUIRE(parsed.result.status == ParseStatus::ok);
    REQUIRE(parsed.argv == *expected);
  }
  CHECK(refused > 1000);  // the generator does reach the error path
}

TEST_CASE("quoted inline arguments live in scratch, which never moves under them", "[request]") {
  const std::string input = "SET \"k\\x41\" 'v v' bare\r\n";
  std::vector<std::string_view> argv;
  std::string scratch;
  REQUIRE(parse_request(input, {}, argv, scratch).status == ParseStatus::ok);
  REQUIRE(argv.size() == 4);
  CHECK(argv[1] == "kA");
  CHECK(argv[2] == "v v");
  for (const auto arg : argv) {
    CHECK(arg.data() >= scratch.data());
    CHECK(arg.data() + arg.size() <= scratch.data() + scratch.size());
  }
  // A later parse reuses scratch; the earlier slices are then the caller's to drop.
  REQUIRE(parse_request("\"x\"\n", {}, argv, scratch).status == ParseStatus::ok);
  CHECK(argv == std::vector<std::string_view>{"x"});
}

TEST_CASE("unbalanced quotes", "[request][inline][error]") {
  for (const std::string line : {"\"abc", "'abc", "\"abc\"def", "'a'b", "\"abc\\\"", "\"abc\\",
                                 "SET \"a", "x \"a\"\"b\"", "'it\\'"}) {
    check_error(line + "\r\n", ParseStatus::invalid,
                "Protocol error: unbalanced quotes in request");
  }
}

TEST_CASE("malformed multibulk", "[request][error]") {
  constexpr auto kInvalid = ParseStatus::invalid;
  const std::string_view mbulk = "Protocol error: invalid multibulk length";
  const std::string_view bulk = "Protocol error: invalid bulk length";
  check_error("*abc\r\n", kInvalid, mbulk);
  check_error("*\r\n", kInvalid, mbulk);
  check_error("*01\r\n", kInvalid, mbulk);
  check_error("*+1\r\n", kInvalid, mbulk);
  check_error("*1 \r\n", kInvalid, mbulk);
  check_error("*-0\r\n", kInvalid, mbulk);
  check_error("*9223372036854775808\r\n", kInvalid, mbulk);
  check_error("*1\rX", kInvalid, mbulk);
  check_error("*1\r\n$abc\r\n", kInvalid, bulk);
  check_error("*1\r\n$-1\r\n", kInvalid, bulk);
  check_error("*1\r\n$\r\n", kInvalid, bulk);
  check_error("*1\r\n$1\rX", kInvalid, bulk);
  check_error("*1\r\n$3\r\nabcX", kInvalid, bulk);
  check_error("*1\r\n$3\r\nabc\rX", kInvalid, bulk);
  check_error("*1\r\n$3\r\nabcd\r\n", kInvalid, bulk);
  check_error("*2\r\n$1\r\na\r\n:1\r\n", kInvalid, "Protocol error: expected '$', got ':'");
  check_error("*1\r\nX", kInvalid, "Protocol error: expected '$', got 'X'");
  check_error("*1\r\n\r\n", kInvalid, "Protocol error: expected '$'");
  check_error(std::string("*1\r\n\0", 5), kInvalid, "Protocol error: expected '$'");
  check_error("*1\r\n\xff", kInvalid, "Protocol error: expected '$'");
}

TEST_CASE("limits", "[request][limits]") {
  RequestLimits limits;
  limits.max_elements = 4;
  limits.max_bulk_length = 10;
  limits.max_inline_length = 32;
  constexpr auto kTooLarge = ParseStatus::too_large;

  CHECK(parse("*4\r\n", limits).result.status == ParseStatus::need_more);
  check_error("*5\r\n", kTooLarge, "Protocol error: invalid multibulk length", limits);
  check_error("*9223372036854775807\r\n", kTooLarge, "Protocol error: invalid multibulk length",
              limits);
  CHECK(parse("*1\r\n$10\r\n", limits).result.status == ParseStatus::need_more);
  check_error("*1\r\n$11\r\n", kTooLarge, "Protocol error: invalid bulk length", limits);

  const std::string line(32, 'a');
  CHECK(parse(line, limits).result.status == ParseStatus::need_more);
  CHECK(parse(line + "\n", limits).result.status == ParseStatus::ok);
  check_error(line + "a", kTooLarge, "Protocol error: too big inline request", limits);
  // The limit holds however the line arrives, even when its end is already buffered.
  check_error(line + "a\r\n", kTooLarge, "Protocol error: too big inline request", limits);
  // An inline line is held to max_elements too (found by the fuzz target with the before-AUTH
  // limits): four arguments pass, five do not, quoted or bare.
  CHECK(parse("a b c d\r\n", limits).result.status == ParseStatus::ok);
  check_error("a b c d e\r\n", kTooLarge, "Protocol error: too many arguments in inline request",
              limits);
  check_error("a 'b' c d e\r\n", kTooLarge, "Protocol error: too many arguments in inline request",
              limits);

  const std::string digits(31, '1');
  CHECK(parse("*" + digits, limits).result.status == ParseStatus::need_more);
  check_error("*" + digits + "1", kTooLarge, "Protocol error: too big mbulk count string", limits);
  check_error("*1\r\n$" + digits + "1", kTooLarge, "Protocol error: too big bulk count string",
              limits);
  check_error("*" + digits + "\r\n", ParseStatus::invalid,
              "Protocol error: invalid multibulk length", limits);
}

// Plain digit headers are read in one pass, anything else by the general path: both must give
// Redis's answers at the seam between them.
TEST_CASE("header numbers at the edges of the one-pass reading", "[request][limits]") {
  const auto invalid = ParseStatus::invalid;
  check_error("*02\r\n$1\r\na\r\n$1\r\nb\r\n", invalid, "Protocol error: invalid multibulk length");
  check_error("*1\r\n$03\r\nabc\r\n", invalid, "Protocol error: invalid bulk length");
  check_error("*1\r\n$-1\r\n", invalid, "Protocol error: invalid bulk length");
  check_error("*1\r\n$+3\r\nabc\r\n", invalid, "Protocol error: invalid bulk length");
  const auto empty = parse("*1\r\n$0\r\n\r\n");
  REQUIRE(empty.result.status == ParseStatus::ok);
  CHECK(empty.argv == Argv{""});
  // 18 digits (read in one pass) and 19 digits (the general path) are both just too large.
  check_error("*100000000000000000\r\n", ParseStatus::too_large,
              "Protocol error: invalid multibulk length");
  check_error("*1\r\n$1000000000000000000\r\n", ParseStatus::too_large,
              "Protocol error: invalid bulk length");

  RequestLimits limits;
  limits.max_inline_length = 2;  // "$1" fits, "$12" does not, however the line ends
  CHECK(parse("*1\r\n$1\r\na\r\n", limits).result.status == ParseStatus::ok);
  check_error("*1\r\n$12\r\n", ParseStatus::too_large, "Protocol error: too big bulk count string",
              limits);
}

TEST_CASE("the default limits match Redis", "[request][limits]") {
  const RequestLimits limits;
  CHECK(limits.max_bulk_length == std::size_t{512} * 1024 * 1024);
  CHECK(parse("*1\r\n$536870912\r\n").result.status == ParseStatus::need_more);
  CHECK(parse("*1\r\n$536870913\r\n").result.status == ParseStatus::too_large);
  CHECK(parse(std::string(std::size_t{64} * 1024, 'a')).result.status == ParseStatus::need_more);
  CHECK(parse(std::string(std::size_t{64} * 1024 + 1, 'a')).result.status ==
        ParseStatus::too_large);
}

TEST_CASE("wire counts never size argv", "[request][limits]") {
  std::vector<std::string_view> argv;
  std::string scratch;
  const std::string input = "*1000000\r\n$1\r\na\r\n";
  CHECK(parse_request(input, {}, argv, scratch).status == ParseStatus::need_more);
  CHECK(argv.capacity() <= 256);
}

TEST_CASE("every strict prefix of a request needs more and consumes nothing", "[request]") {
  test::Rng rng(7);
  for (int i = 0; i < 200; ++i) {
    std::vector<Argv> expected;
    const std::string input = random_pipeline(rng, 1, expected);
    for (std::size_t size = 0; size < input.size(); ++size) {
      const Parsed parsed = parse(std::string_view(input).substr(0, size));
      REQUIRE(parsed.result.status == ParseStatus::need_more);
      REQUIRE(parsed.result.consumed == 0);
    }
    const Parsed parsed = parse(input);
    REQUIRE(parsed.result.consumed == input.size());
    REQUIRE(parsed.argv == expected[0]);
  }
}

TEST_CASE("a pipeline parses the same whole, byte by byte and split anywhere", "[request]") {
  test::Rng rng(42);
  for (int round = 0; round < 20; ++round) {
    std::vector<Argv> expected;
    // Short arguments keep the quadratic every-offset loop quick; long ones are covered elsewhere.
    const std::string input = random_pipeline(rng, 12, expected, 40);
    const Stream whole = feed_whole(input);
    REQUIRE(whole.end == ParseStatus::need_more);
    REQUIRE(whole.requests == expected);
    REQUIRE(feed_bytewise(input) == whole);
    check_every_split(input, whole);
  }
}

TEST_CASE("a deep pipeline in one buffer", "[request]") {
  test::Rng rng(1);
  std::vector<Argv> expected;
  const std::string input = random_pipeline(rng, 5000, expected);
  CHECK(feed_whole(input).requests == expected);
}

TEST_CASE("inline quoting and errors survive any split", "[request][inline]") {
  const std::string input =
      "SET \"a\\x41\\n\" 'it\\'s'\r\n\n*0\r\n  GET  x\n*1\r\n$1\r\nz\r\n\"unbalanced\r\n";
  const Stream whole = feed_whole(input);
  REQUIRE(whole.requests == std::vector<Argv>{{"SET", "aA\n", "it's"}, {"GET", "x"}, {"z"}});
  REQUIRE(whole.end == ParseStatus::invalid);
  REQUIRE(feed_bytewise(input) == whole);
  check_every_split(input, whole);
}

TEST_CASE("errors are found whatever the chunking", "[request][error]") {
  RequestLimits limits;
  limits.max_inline_length = 16;
  limits.max_bulk_length = 8;
  for (const std::string& input :
       std::vector<std::string>{"*1\r\n$3\r\nabcX\r\n", "*2\r\n$1\r\na\r\n+x\r\n", "*1\r\n$9\r\n",
                                "PING\r\n" + std::string(40, 'x'), "*" + std::string(40, '1'),
                                "*1\r\n$1\r\na\r\n*x\r\n"}) {
    const Stream whole = feed_whole(input, limits);
    INFO(input);
    REQUIRE(whole.end != ParseStatus::need_more);
    REQUIRE(feed_bytewise(input, limits) == whole);
    check_every_split(input, whole, limits);
  }
}

TEST_CASE("append_command round-trips through the parser", "[request][encoder]") {
  test::Rng rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::string> args(test::pick(rng, 8) + 1);
    for (auto& arg : args) arg = test::random_string(rng, test::binary_alphabet());
    const std::vector<std::string_view> views(args.begin(), args.end());
    std::string encoded;
    append_command(encoded, views);
    const Parsed parsed = parse(encoded);
    REQUIRE(parsed.result.status == ParseStatus::ok);
    REQUIRE(parsed.result.consumed == encoded.size());
    REQUIRE_FALSE(parsed.result.inline_form);
    REQUIRE(parsed.argv == Argv(args.begin(), args.end()));
  }
}

TEST_CASE("inline commands re-encode as the same multibulk command", "[request][encoder]") {
  std::vector<std::string_view> argv;
  std::string scratch;
  REQUIRE(parse_request("SET \"k k\" v\r\n", {}, argv, scratch).inline_form);
  std::string encoded;
  append_command(encoded, argv);
  CHECK(encoded == "*3\r\n$3\r\nSET\r\n$3\r\nk k\r\n$1\r\nv\r\n");
}

}  // namespace
}  // namespace corral::resp
