// Invariants of the resp/ parsers on arbitrary bytes, shared by the libFuzzer targets and by the
// unit test that replays the corpus. A broken invariant throws std::logic_error (libFuzzer reports
// the uncaught exception as a crash; Catch2 reports it as a failure naming the corpus file).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hiredis_oracle.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "resp/reply_framer.hpp"
#include "resp/request_parser.hpp"

namespace corral::resp::fuzz {

inline void expect(bool ok, const char* what) {
  if (!ok) throw std::logic_error(what);
}

// Small limits make the fuzzer reach every limit with short inputs.
inline RequestLimits small_request_limits() {
  RequestLimits limits;
  limits.max_bulk_length = 64;
  limits.max_elements = 16;
  limits.max_inline_length = 64;
  return limits;
}

inline FrameLimits small_frame_limits() {
  FrameLimits limits;
  limits.max_bulk_length = 64;
  limits.max_elements = 16;
  return limits;
}

struct Request {
  ParseResult result;
  std::vector<std::string> argv;
};

inline bool within(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

inline Request parse_checked(std::string_view input, const RequestLimits& limits) {
  std::vector<std::string_view> argv;
  std::string scratch;
  Request request{parse_request(input, limits, argv, scratch), {}};
  const ParseResult& r = request.result;
  if (r.status == ParseStatus::ok) {
    expect(r.consumed > 0 && r.consumed <= input.size(), "ok consumes 1..size bytes");
    expect(r.error.empty(), "ok has no error");
  } else {
    expect(r.consumed == 0, "only ok consumes");
    expect(argv.empty(), "only ok fills argv");
    expect(r.error.empty() == (r.status == ParseStatus::need_more), "errors carry a message");
    expect(r.error.empty() || r.error.starts_with("Protocol error: "), "Redis-style message");
  }
  for (const auto arg : argv) {
    expect(within(arg, input.substr(0, r.consumed)) || within(arg, scratch),
           "arguments are slices of the request or of scratch");
    request.argv.emplace_back(arg);
  }
  return request;
}

inline bool same(const Request& a, const Request& b) {
  return a.result.status == b.result.status && a.result.consumed == b.result.consumed &&
         a.result.inline_form == b.result.inline_form && a.result.error == b.result.error &&
         a.argv == b.argv;
}

inline void check_round_trip(std::string_view input, const Request& request,
                             const RequestLimits& limits) {
  if (request.argv.empty() || request.argv.size() > limits.max_elements) return;
  for (const auto& arg : request.argv) {
    if (arg.size() > limits.max_bulk_length) return;
  }
  const std::vector<std::string_view> views(request.argv.begin(), request.argv.end());
  std::string encoded;
  append_command(encoded, views);
  // Lengths are parsed strictly (no "+", no leading zeros), so a multibulk request has one
  // encoding: the bytes the parser accepted.
  expect(request.result.inline_form || encoded == input.substr(0, request.result.consumed),
         "a multibulk request is its own canonical encoding");
  const Request again = parse_checked(encoded, limits);
  expect(again.result.status == ParseStatus::ok, "encoded command parses");
  expect(again.result.consumed == encoded.size(), "encoded command is consumed whole");
  expect(!again.result.inline_form, "encoded command is multibulk");
  expect(again.argv == request.argv, "encoded command gives the same argv");
}

// An inline request splits exactly as Redis splits it (sdssplitargs), unbalanced quotes included.
inline void check_against_redis(std::string_view input, const Request& request) {
  const ParseStatus status = request.result.status;
  if (!request.result.inline_form ||
      (status != ParseStatus::ok && status != ParseStatus::invalid)) {
    return;
  }
  std::string_view line = input.substr(0, input.find('\n'));
  if (line.ends_with('\r')) line.remove_suffix(1);
  if (line.find('\0') != std::string_view::npos) return;  // Redis stops at NUL; Corral does not
  const auto expected = oracle::split_like_redis(line);
  if (status == ParseStatus::ok) {
    expect(expected.has_value() && *expected == request.argv, "inline split as Redis splits");
  } else {
    expect(!expected.has_value(), "inline refused only where Redis refuses it");
  }
}

// One request at the front of `input`; returns bytes consumed (0 when the stream stops here).
inline std::size_t check_one_request(std::string_view input, const RequestLimits& limits) {
  const Request whole = parse_checked(input, limits);
  if (whole.result.status == ParseStatus::ok) {
    expect(whole.argv.size() <= limits.max_elements, "an accepted request is within max_elements");
    for (const auto& arg : whole.argv) {
      expect(arg.size() <= std::max(limits.max_bulk_length, limits.max_inline_length),
             "an accepted argument is within the length limits");
    }
  }
  // A prefix has seen less: it needs more, or it already gives the whole answer.
  for (const std::size_t size : {input.size() / 2, input.size() - 1, whole.result.consumed - 1}) {
    if (size >= input.size()) continue;
    const Request part = parse_checked(input.substr(0, size), limits);
    expect(part.result.status == ParseStatus::need_more || same(part, whole),
           "a prefix needs more or gives the same result");
  }
  // Tighter limits can only turn a result into too_large.
  RequestLimits tighter = small_request_limits();
  tighter.max_bulk_length = std::min(tighter.max_bulk_length, limits.max_bulk_length);
  tighter.max_elements = std::min(tighter.max_elements, limits.max_elements);
  tighter.max_inline_length = std::min(tighter.max_inline_length, limits.max_inline_length);
  const Request small = parse_checked(input, tighter);
  expect(small.result.status == ParseStatus::too_large || same(small, whole),
         "tighter limits only add too_large");
  check_round_trip(input, whole, limits);
  check_against_redis(input, whole);
  return whole.result.status == ParseStatus::ok ? whole.result.consumed : 0;
}

inline void check_requests(std::string_view input, const RequestLimits& limits = {}) {
  for (int i = 0; i < 64 && !input.empty(); ++i) {
    const std::size_t consumed = check_one_request(input, limits);
    if (consumed == 0) return;
    input.remove_prefix(consumed);
  }
}

inline void check_frame(std::string_view frame) {
  const auto reply = decode_reply(frame);
  if (!reply) {
    // Only nesting deeper than the decoder's cap may be refused after the framer accepted it.
    const auto headers =
        static_cast<std::size_t>(std::count_if(frame.begin(), frame.end(), [](char c) {
          return c == '*' || c == '%' || c == '~' || c == '>' || c == '|';
        }));
    expect(headers > kMaxReplyDepth, "a framed reply decodes");
    return;
  }
  std::string encoded;
  append_reply(encoded, *reply);
  const auto again = decode_reply(encoded);
  expect(again.has_value() && *again == *reply, "decoded reply re-encodes to itself");
  // Streamed strings and aggregates come back in their fixed-length form: only the tree compares.
  if (frame.find("?\r\n") != std::string_view::npos) return;
  // Numbers are strict, so the encoding is canonical: the same bytes, except that a null array
  // (*-1) comes back as a null bulk ($-1) of the same size.
  expect(encoded.size() == frame.size(), "re-encoding keeps the size");
  for (std::size_t i = 0; i < frame.size(); ++i) {
    expect(encoded[i] == frame[i] || (frame[i] == '*' && encoded[i] == '$'),
           "re-encoding gives the same bytes");
  }
  // hiredis 0.14 reads RESP2 only.
  if (is_resp2(*reply) && oracle::depth(*reply) <= oracle::kHiredisMaxDepth) {
    expect(oracle::HiredisReader::decode_one(frame) == *reply, "hiredis reads the same reply");
  }
}

// With the default limits, which decode_reply's own framing can only exceed.
inline std::size_t check_one_reply(std::string_view input) {
  const FrameResult whole = frame_reply(input);
  const bool complete = whole.status == FrameStatus::complete;
  expect(complete ? whole.size > 0 && whole.size <= input.size() : whole.size == 0,
         "size is set exactly when complete");
  for (const std::size_t size : {input.size() / 2, input.size() - 1, whole.size - 1}) {
    if (size >= input.size()) continue;
    const FrameResult part = frame_reply(input.substr(0, size));
    expect(part.status == FrameStatus::need_more ||
               (part.status == whole.status && part.size == whole.size),
           "a prefix needs more or gives the same result");
  }
  const FrameResult small = frame_reply(input, small_frame_limits());
  expect(small.status == FrameStatus::invalid ||
             (small.status == whole.status && small.size == whole.size),
         "tighter limits only add invalid");
  const bool decodes = decode_reply(input).has_value();
  expect(!decodes || (complete && whole.size == input.size()),
         "decode_reply accepts only exactly one framed reply");
  if (!complete) return 0;
  check_frame(input.substr(0, whole.size));
  return whole.size;
}

inline void check_replies(std::string_view input) {
  for (int i = 0; i < 64 && !input.empty(); ++i) {
    const std::size_t size = check_one_reply(input);
    if (size == 0) return;
    input.remove_prefix(size);
  }
}

}  // namespace corral::resp::fuzz
