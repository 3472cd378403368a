// RESP3 replies: every type framed whole, one byte at a time and split at every offset, decoded
// and re-encoded to the same bytes; the limits and every malformed form refused.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "resp/reply.hpp"
#include "resp/reply_framer.hpp"
#include "resp/request_parser.hpp"

namespace corral::resp {
namespace {

using Type = Reply::Type;

struct Case {
  std::string bytes;
  Type type;
};

const std::vector<Case>& every_type() {
  static const std::vector<Case> cases{
      {"%2\r\n+a\r\n:1\r\n$1\r\nb\r\n*1\r\n_\r\n", Type::map},
      {"%0\r\n", Type::map},
      {"~3\r\n#t\r\n#f\r\n,3.14\r\n", Type::set},
      {">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", Type::push},
      {"|1\r\n+ttl\r\n:3600\r\n*1\r\n:1\r\n", Type::attribute},
      {"_\r\n", Type::nil},
      {"#t\r\n", Type::boolean},
      {",1.5e-10\r\n", Type::double_type},
      {",-inf\r\n", Type::double_type},
      {",nan\r\n", Type::double_type},
      {"(3492890328409238509324850943850943825024385\r\n", Type::big_number},
      {"=15\r\ntxt:Some string\r\n", Type::verbatim},
      {"!21\r\nSYNTAX invalid syntax\r\n", Type::blob_error},
      {"*2\r\n%1\r\n~1\r\n>1\r\n_\r\n|1\r\n+k\r\n+v\r\n#f\r\n(-12\r\n", Type::array},
  };
  return cases;
}

std::vector<std::size_t> frame_all(std::string_view bytes, const std::vector<std::size_t>& cuts) {
  std::vector<std::size_t> sizes;
  std::string buffer;
  std::size_t fed = 0;
  for (std::size_t cut : cuts) {
    buffer.append(bytes.substr(fed, cut - fed));
    fed = cut;
    for (;;) {
      const FrameResult r = frame_reply(buffer);
      REQUIRE(r.status != FrameStatus::invalid);
      if (r.status == FrameStatus::need_more) break;
      sizes.push_back(r.size);
      buffer.erase(0, r.size);
    }
  }
  return sizes;
}

TEST_CASE("every RESP3 type frames, decodes and re-encodes to itself", "[reply][resp3]") {
  for (const auto& [bytes, type] : every_type()) {
    INFO(bytes);
    const FrameResult whole = frame_reply(bytes);
    REQUIRE(whole.status == FrameStatus::complete);
    REQUIRE(whole.size == bytes.size());
    for (std::size_t size = 0; size < bytes.size(); ++size) {
      REQUIRE(frame_reply(std::string_view(bytes).substr(0, size)).status ==
              FrameStatus::need_more);
    }
    const auto decoded = decode_reply(bytes);
    REQUIRE(decoded);
    CHECK(decoded->type == type);
    CHECK_FALSE(is_resp2(*decoded));
    std::string encoded;
    append_reply(encoded, *decoded);
    CHECK(encoded == bytes);
  }
}

TEST_CASE("a RESP3 stream frames the same byte by byte and split at every offset",
          "[reply][resp3]") {
  std::string bytes;
  std::vector<std::size_t> expected;
  for (const auto& c : every_type()) {
    bytes += c.bytes;
    expected.push_back(c.bytes.size());
  }
  std::vector<std::size_t> one_by_one;
  for (std::size_t i = 1; i <= bytes.size(); ++i) one_by_one.push_back(i);
  CHECK(frame_all(bytes, {bytes.size()}) == expected);
  CHECK(frame_all(bytes, one_by_one) == expected);
  for (std::size_t split = 0; split <= bytes.size(); ++split) {
    INFO("split at " << split);
    REQUIRE(frame_all(bytes, {split, bytes.size()}) == expected);
  }
}

TEST_CASE("decoded RESP3 values", "[reply][resp3]") {
  const auto map = decode_reply("%1\r\n$3\r\nkey\r\n#t\r\n");
  REQUIRE(map);
  REQUIRE(map->elements.size() == 2);
  CHECK(map->elements[0].text == "key");
  CHECK(map->elements[1].type == Type::boolean);
  CHECK(map->elements[1].integer == 1);
  const auto attribute = decode_reply("|1\r\n+a\r\n+b\r\n:7\r\n");
  REQUIRE(attribute);
  REQUIRE(attribute->elements.size() == 3);
  CHECK(attribute->elements.back().integer == 7);
  CHECK(decode_reply(",-1.25\r\n")->text == "-1.25");
  CHECK(decode_reply("=8\r\nmkd:# hi\r\n")->text == "mkd:# hi");
}

TEST_CASE("streamed strings and aggregates", "[reply][resp3]") {
  const std::string streamed =
      "*?\r\n:1\r\n%?\r\n+a\r\n:1\r\n.\r\n$?\r\n;4\r\nHell\r\n;1\r\no\r\n;0\r\n.\r\n";
  CHECK(frame_all(streamed, {streamed.size()}) == std::vector<std::size_t>{streamed.size()});
  std::vector<std::size_t> one_by_one;
  for (std::size_t i = 1; i <= streamed.size(); ++i) one_by_one.push_back(i);
  CHECK(frame_all(streamed, one_by_one) == std::vector<std::size_t>{streamed.size()});
  const auto decoded = decode_reply(streamed);
  REQUIRE(decoded);
  REQUIRE(decoded->elements.size() == 3);
  CHECK(decoded->elements[1].type == Type::map);
  CHECK(decoded->elements[1].elements.size() == 2);
  CHECK(decoded->elements[2].text == "Hello");
  CHECK(frame_reply("*?\r\n.\r\n").size == 7);
  CHECK(frame_reply("*?\r\n*1\r\n.\r\n").status == FrameStatus::invalid);  // `.` inside *1
  CHECK(frame_reply("%?\r\n:1\r\n.\r\n").status == FrameStatus::invalid);  // a key alone
  CHECK(frame_reply("%?\r\n:1\r\n:2\r\n.\r\n").status == FrameStatus::complete);
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "*?\r\n";
  CHECK(frame_reply(deep).status == FrameStatus::invalid);
}

TEST_CASE("malformed RESP3 replies", "[reply][resp3][error]") {
  for (const std::string& bytes :
       std::vector<std::string>{"_x\r\n", "#x\r\n", "#\r\n", ",\r\n", ",1.x\r\n", "=3\r\ntxt\r\n",
                                "=5\r\ntxt!x\r\n", "%-1\r\n", "~-1\r\n", ">-1\r\n", "!-1\r\n",
                                "|?\r\n", ".\r\n", "$?\r\n;x\r\n", "$?\r\n:1\r\n", "*?x\r\n"}) {
    INFO(bytes);
    CHECK(frame_reply(bytes).status == FrameStatus::invalid);
    CHECK_FALSE(decode_reply(bytes));
  }
}

TEST_CASE("a big number is framed as Redis sends it, digits or not", "[reply][resp3]") {
  // A script's `return {big_number='123\r\n123'}`, as Redis 7.0 answers it.
  for (const std::string& bytes : std::vector<std::string>{"(123  123\r\n", "(\r\n", "(-\r\n"}) {
    INFO(bytes);
    CHECK(frame_reply(bytes).status == FrameStatus::complete);
    CHECK(frame_reply(bytes).size == bytes.size());
  }
}

TEST_CASE("RESP3 frame limits", "[reply][resp3][limits]") {
  FrameLimits limits;
  limits.max_bulk_length = 5;
  limits.max_elements = 4;
  CHECK(frame_reply("%2\r\n", limits).status == FrameStatus::need_more);
  CHECK(frame_reply("%3\r\n", limits).status == FrameStatus::invalid);
  CHECK(frame_reply("|3\r\n", limits).status == FrameStatus::invalid);
  CHECK(frame_reply("~5\r\n", limits).status == FrameStatus::invalid);
  CHECK(frame_reply(">5\r\n", limits).status == FrameStatus::invalid);
  CHECK(frame_reply("=6\r\n", limits).status == FrameStatus::invalid);
  CHECK(frame_reply("!6\r\n", limits).status == FrameStatus::invalid);
  CHECK(frame_reply("$?\r\n;6\r\n", limits).status == FrameStatus::invalid);
  // Maps nest like arrays: depth costs the framer nothing, the decoder caps it.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "%1\r\n+k\r\n";
  deep += "_\r\n";
  CHECK(frame_reply(deep).size == deep.size());
  CHECK_FALSE(decode_reply(deep));
}

TEST_CASE("a request in a RESP3 type is a protocol error", "[request][resp3]") {
  for (const std::string bytes : {"%1\r\n$3\r\nGET\r\n$1\r\nk\r\n", "~1\r\n", "_\r\n", "#t\r\n",
                                  ">1\r\n", "|1\r\n", ",1\r\n", "(1\r\n", "=5\r\n", "!1\r\n"}) {
    INFO(bytes);
    std::vector<std::string_view> argv;
    std::string scratch;
    const ParseResult r = parse_request(bytes, {}, argv, scratch);
    CHECK(r.status == ParseStatus::invalid);
    CHECK(r.error.starts_with("Protocol error: "));
  }
}

}  // namespace
}  // namespace corral::resp
