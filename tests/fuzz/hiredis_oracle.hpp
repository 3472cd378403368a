// hiredis as the reference implementation: its reply reader for replies, and its copy of Redis's
// sdssplitargs for inline requests. Used by the unit tests and the fuzz targets.
#pragma once

// sds.h has no extern "C" of its own: include it first, with C linkage, so that hiredis.h's
// include of it is a no-op whichever header a translation unit names first.
extern "C" {
#include <hiredis/sds.h>
}
#include <hiredis/hiredis.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "resp/reply.hpp"

namespace corral::resp::oracle {

// hiredis 0.14 refuses arrays nested deeper than this.
inline constexpr std::size_t kHiredisMaxDepth = 7;

inline Reply from_hiredis(const redisReply& in) {
  Reply out;
  switch (in.type) {
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::simple;
      out.text.assign(in.str, in.len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::error;
      out.text.assign(in.str, in.len);
      break;
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::bulk;
      out.text.assign(in.str, in.len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::integer;
      out.integer = in.integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::array;
      out.elements.reserve(in.elements);
      for (std::size_t i = 0; i < in.elements; ++i) {
        out.elements.push_back(from_hiredis(*in.element[i]));
      }
      break;
    default:
      break;  // REDIS_REPLY_NIL
  }
  return out;
}

inline std::size_t depth(const Reply& reply) {
  std::size_t deepest = 0;
  for (const Reply& element : reply.elements) deepest = std::max(deepest, depth(element));
  return reply.type == Reply::Type::array ? deepest + 1 : 0;
}

// hiredis's reply reader, fed incrementally like a socket would.
class HiredisReader {
 public:
  HiredisReader() : reader_(redisReaderCreate()) {}
  ~HiredisReader() { redisReaderFree(reader_); }
  HiredisReader(const HiredisReader&) = delete;
  HiredisReader& operator=(const HiredisReader&) = delete;

  bool feed(std::string_view bytes) {
    return redisReaderFeed(reader_, bytes.data(), bytes.size()) == REDIS_OK;
  }

  // nullopt when no complete reply is buffered; `error` set when hiredis gave up on the stream.
  std::optional<Reply> next(bool& error) {
    void* raw = nullptr;
    error = redisReaderGetReply(reader_, &raw) != REDIS_OK;
    if (raw == nullptr) return std::nullopt;
    Reply reply = from_hiredis(*static_cast<redisReply*>(raw));
    freeReplyObject(raw);
    return reply;
  }

  // The single reply in `bytes`; throws if hiredis sees anything else.
  static Reply decode_one(std::string_view bytes) {
    HiredisReader reader;
    reader.feed(bytes);
    bool error = false;
    auto reply = reader.next(error);
    if (error || !reply || reader.next(error) || error) {
      throw std::logic_error("hiredis does not read exactly one reply");
    }
    return *reply;
  }

 private:
  redisReader* reader_;
};

// Redis's own splitting of an inline line (without its line end); nullopt on unbalanced quotes.
// Redis works on C strings, so lines holding a NUL byte are outside this oracle's domain.
inline std::optional<std::vector<std::string>> split_like_redis(std::string_view line) {
  if (line.find('\0') != std::string_view::npos) throw std::logic_error("NUL in inline line");
  const std::string text(line);
  int argc = 0;
  sds* tokens = sdssplitargs(text.c_str(), &argc);
  if (tokens == nullptr) return std::nullopt;
  std::vector<std::string> args;
  args.reserve(static_cast<std::size_t>(argc));
  for (int i = 0; i < argc; ++i) args.emplace_back(tokens[i], sdslen(tokens[i]));
  sdsfreesplitres(tokens, argc);
  return args;
}

}  // namespace corral::resp::oracle
