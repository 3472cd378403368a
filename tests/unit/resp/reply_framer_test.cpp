// Reply framer and decoder against hiredis's reader as the oracle, on thousands of seeded random
// replies fed whole, byte by byte and split at every offset; plus every way a reply can be invalid.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "resp/reply.hpp"
#include "resp/reply_framer.hpp"
#include "resp_test_util.hpp"

namespace corral::resp {
namespace {

std::vector<Reply> hiredis_decode_all(std::string_view bytes, std::size_t chunk) {
  test::HiredisReader reader;
  std::vector<Reply> replies;
  for (std::size_t pos = 0; pos < bytes.size(); pos += chunk) {
    REQUIRE(reader.feed(bytes.substr(pos, chunk)));
    bool error = false;
    while (auto reply = reader.next(error)) replies.push_back(std::move(*reply));
    REQUIRE_FALSE(error);
  }
  return replies;
}

struct Framed {
  std::vector<std::size_t> sizes;
  std::vector<Reply> replies;
  FrameStatus end = FrameStatus::need_more;
  bool operator==(const Framed&) const = default;
};

// Frames replies as an upstream connection would: append each chunk, take every complete reply.
Framed frame_stream(std::string_view bytes, const std::vector<std::size_t>& cuts,
                    const FrameLimits& limits = {}) {
  Framed framed;
  std::string buffer;
  std::size_t fed = 0;
  for (std::size_t cut : cuts) {
    buffer.append(bytes.substr(fed, cut - fed));
    fed = cut;
    for (;;) {
      const FrameResult r = frame_reply(buffer, limits);
      if (r.status == FrameStatus::need_more) break;
      if (r.status == FrameStatus::invalid) {
        framed.end = FrameStatus::invalid;
        return framed;
      }
      REQUIRE(r.size > 0);
      REQUIRE(r.size <= buffer.size());
      auto reply = decode_reply(std::string_view(buffer).substr(0, r.size));
      REQUIRE(reply);
      framed.sizes.push_back(r.size);
      framed.replies.push_back(std::move(*reply));
      buffer.erase(0, r.size);
    }
  }
  return framed;
}

std::vector<std::size_t> every_byte(std::size_t size) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i <= size; ++i) cuts.push_back(i);
  return cuts;
}

std::string nested_arrays(std::size_t depth) {
  std::string bytes;
  for (std::size_t i = 0; i < depth; ++i) bytes += "*1\r\n";
  return bytes + ":1\r\n";
}

TEST_CASE("each reply type frames and decodes", "[reply]") {
  struct Case {
    std::string bytes;
    Reply::Type type;
  };
  for (const auto& [bytes, type] :
       std::vector<Case>{{"+OK\r\n", Reply::Type::simple},
                         {"+\r\n", Reply::Type::simple},
                         {"-ERR bad\r\n", Reply::Type::error},
                         {":-42\r\n", Reply::Type::integer},
                         {"$3\r\na\r\n\r\n", Reply::Type::bulk},
                         {"$0\r\n\r\n", Reply::Type::bulk},
                         {"$-1\r\n", Reply::Type::null},
                         {"*-1\r\n", Reply::Type::null},
                         {"*0\r\n", Reply::Type::array},
                         {"*2\r\n$-1\r\n*1\r\n:1\r\n", Reply::Type::array}}) {
    INFO(bytes);
    const FrameResult r = frame_reply(bytes + "+next\r\n");
    CHECK(r.status == FrameStatus::complete);
    CHECK(r.size == bytes.size());
    const auto reply = decode_reply(bytes);
    REQUIRE(reply);
    CHECK(reply->type == type);
    CHECK(*reply == test::HiredisReader::decode_one(bytes));
  }
}

TEST_CASE("a lone CR is content in simple strings, as in hiredis", "[reply]") {
  const std::string bytes = "+a\rb\r\n";
  CHECK(frame_reply(bytes).size == bytes.size());
  CHECK(frame_reply("+a\r").status == FrameStatus::need_more);
  CHECK(frame_reply("+a\rb").status == FrameStatus::need_more);
  CHECK(decode_reply(bytes)->text == "a\rb");
  CHECK(*decode_reply(bytes) == test::HiredisReader::decode_one(bytes));
}

TEST_CASE("random replies agree with hiredis", "[reply][hiredis]") {
  test::Rng rng(2024);
  for (int i = 0; i < 3000; ++i) {
    std::string bytes;
    const Reply expected = test::random_reply(rng, bytes, 5);
    INFO("reply " << i << ": " << bytes.substr(0, 200));
    REQUIRE(test::HiredisReader::decode_one(bytes) == expected);

    const FrameResult whole = frame_reply(bytes);
    REQUIRE(whole.status == FrameStatus::complete);
    REQUIRE(whole.size == bytes.size());
    REQUIRE(frame_reply(bytes + "*1\r\n").size == bytes.size());
    for (std::size_t size = 0; size < bytes.size(); ++size) {
      REQUIRE(frame_reply(std::string_view(bytes).substr(0, size)).status ==
              FrameStatus::need_more);
    }
    const auto decoded = decode_reply(bytes);
    REQUIRE(decoded);
    REQUIRE(*decoded == expected);
    REQUIRE_FALSE(decode_reply(bytes + "+"));

    std::string reencoded;
    append_reply(reencoded, *decoded);
    REQUIRE(decode_reply(reencoded) == decoded);
  }
}

TEST_CASE("a stream of replies frames the same whole, byte by byte and split anywhere",
          "[reply][hiredis]") {
  test::Rng rng(77);
  for (int round = 0; round < 30; ++round) {
    std::string bytes;
    std::vector<Reply> expected;
    expected.reserve(15);
    for (int i = 0; i < 15; ++i) expected.push_back(test::random_reply(rng, bytes, 4));
    if (bytes.size() > 20000) continue;  // keep the every-offset loop quick

    const Framed whole = frame_stream(bytes, {bytes.size()});
    REQUIRE(whole.replies == expected);
    REQUIRE(hiredis_decode_all(bytes, bytes.size()) == expected);
    REQUIRE(hiredis_decode_all(bytes, 1) == expected);
    REQUIRE(frame_stream(bytes, every_byte(bytes.size())) == whole);
    for (std::size_t split = 0; split <= bytes.size(); ++split) {
      INFO("split at " << split);
      REQUIRE(frame_stream(bytes, {split, bytes.size()}) == whole);
    }
  }
}

TEST_CASE("a long pipeline of replies agrees with hiredis", "[reply][hiredis]") {
  test::Rng rng(5);
  std::string bytes;
  std::vector<Reply> expected;
  expected.reserve(3000);
  for (int i = 0; i < 3000; ++i) expected.push_back(test::random_reply(rng, bytes, 6));
  const Framed framed = frame_stream(bytes, {bytes.size()});
  CHECK(framed.end == FrameStatus::need_more);
  CHECK(framed.replies == expected);
  CHECK(hiredis_decode_all(bytes, 4096) == expected);
}

TEST_CASE("invalid replies", "[reply][error]") {
  for (const std::string& bytes : std::vector<std::string>{"?x\r\n",
                                                           "\r\n",
                                                           "OK\r\n",
                                                           "$abc\r\n",
                                                           "$-2\r\n",
                                                           "*-2\r\n",
                                                           "$01\r\n",
                                                           ":abc\r\n",
                                                           ":\r\n",
                                                           ":+1\r\n",
                                                           ":1 \r\n",
                                                           ":9223372036854775808\r\n",
                                                           ":1\rX",
                                                           "$1\rX",
                                                           "$3\r\nabcX",
                                                           "$3\r\nabc\rX",
                                                           "$1\r\nab\r\n",
                                                           "*1\r\n^",
                                                           "*2\r\n:1\r\n?",
                                                           "*1\r\n*1\r\n$x\r\n",
                                                           "$" + std::string(30, '1'),
                                                           ":" + std::string(30, '1') + "\r\n"}) {
    INFO(bytes);
    CHECK(frame_reply(bytes).status == FrameStatus::invalid);
    CHECK_FALSE(decode_reply(bytes));
  }
}

TEST_CASE("numbers at the edges of int64", "[reply]") {
  CHECK(decode_reply(":9223372036854775807\r\n")->integer == INT64_MAX);
  CHECK(decode_reply(":-9223372036854775808\r\n")->integer == INT64_MIN);
  CHECK(frame_reply(":-9223372036854775809\r\n").status == FrameStatus::invalid);
  CHECK(frame_reply("*9223372036854775807\r\n").status == FrameStatus::invalid);
}

TEST_CASE("frame limits", "[reply][limits]") {
  FrameLimits limits;
  limits.max_bulk_length = 5;
  limits.max_elements = 3;
  CHECK(frame_reply("$5\r\nabcde\r\n", limits).status == FrameStatus::complete);
  CHECK(frame_reply("$6\r\n", limits).status == FrameStatus::invalid);
  CHECK(frame_reply("*3\r\n", limits).status == FrameStatus::need_more);
  CHECK(frame_reply("*4\r\n", limits).status == FrameStatus::invalid);
  CHECK(frame_reply("*1\r\n*4\r\n", limits).status == FrameStatus::invalid);
  // The defaults: 1 GiB bulk, 64 Mi elements, announced but not yet sent.
  CHECK(frame_reply("$1073741824\r\n").status == FrameStatus::need_more);
  CHECK(frame_reply("$1073741825\r\n").status == FrameStatus::invalid);
  CHECK(frame_reply("*67108864\r\n").status == FrameStatus::need_more);
  CHECK(frame_reply("*67108865\r\n").status == FrameStatus::invalid);
}

TEST_CASE("nesting costs the framer nothing; the decoder caps depth", "[reply][limits]") {
  const std::string deep = nested_arrays(200000);
  const FrameResult r = frame_reply(deep);
  CHECK(r.status == FrameStatus::complete);
  CHECK(r.size == deep.size());
  CHECK(frame_reply(std::string_view(deep).substr(0, deep.size() - 1)).status ==
        FrameStatus::need_more);
  CHECK_FALSE(decode_reply(deep));

  CHECK(decode_reply(nested_arrays(kMaxReplyDepth)));
  CHECK_FALSE(decode_reply(nested_arrays(kMaxReplyDepth + 1)));
}

TEST_CASE("decode_reply takes exactly one reply", "[reply]") {
  CHECK_FALSE(decode_reply(""));
  CHECK_FALSE(decode_reply("+OK\r"));
  CHECK_FALSE(decode_reply("+OK\r\n+OK\r\n"));
  CHECK_FALSE(decode_reply("*2\r\n:1\r\n"));
}

}  // namespace
}  // namespace corral::resp
