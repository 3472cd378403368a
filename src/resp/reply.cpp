// Builds a Reply tree from one framed RESP2 or RESP3 reply. Validation is left to frame_reply, so
// the recursive descent here only has to bound its depth.
#include "resp/reply.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "resp/encoder.hpp"
#include "resp/int_parse.hpp"
#include "resp/reply_framer.hpp"

namespace corral::resp {
namespace {

using Type = Reply::Type;

// The type byte of each aggregate type, for decoding and encoding alike.
constexpr std::pair<char, Type> kAggregates[] = {{'*', Type::array},
                                                 {'%', Type::map},
                                                 {'~', Type::set},
                                                 {'>', Type::push},
                                                 {'|', Type::attribute}};
constexpr std::pair<char, Type> kLines[] = {
    {'+', Type::simple}, {'-', Type::error}, {',', Type::double_type}, {'(', Type::big_number}};
constexpr std::pair<char, Type> kBlobs[] = {
    {'$', Type::bulk}, {'=', Type::verbatim}, {'!', Type::blob_error}};

template <std::size_t N>
const std::pair<char, Type>* by_byte(const std::pair<char, Type> (&table)[N], char type) {
  for (const auto& row : table) {
    if (row.first == type) return &row;
  }
  return nullptr;
}

template <std::size_t N>
const std::pair<char, Type>* by_type(const std::pair<char, Type> (&table)[N], Type type) {
  for (const auto& row : table) {
    if (row.second == type) return &row;
  }
  return nullptr;
}

class Decoder {
 public:
  explicit Decoder(std::string_view input) : input_(input) {}

  // `depth` counts the aggregates enclosing the item at pos_.
  bool decode(Reply& out, std::size_t depth) {
    const char type = input_[pos_];
    // The framer has checked every line, so its first CRLF is its end and numbers parse.
    const std::size_t cr = input_.find("\r\n", pos_);
    const std::string_view text = input_.substr(pos_ + 1, cr - pos_ - 1);
    pos_ = cr + 2;
    if (const auto* line = by_byte(kLines, type)) {
      out.type = line->second;
      out.text = text;
      return true;
    }
    if (const auto* blob = by_byte(kBlobs, type)) {
      if (text == "?") return decode_streamed_string(out);
      return decode_bulk(out, blob->second, *detail::parse_int64(text));
    }
    if (const auto* aggregate = by_byte(kAggregates, type)) {
      if (text == "?") return decode_streamed(out, aggregate->second, depth);
      return decode_aggregate(out, aggregate->second, *detail::parse_int64(text), depth);
    }
    switch (type) {
      case ':':
        out.type = Type::integer;
        out.integer = *detail::parse_int64(text);
        return true;
      case '#':
        out.type = Type::boolean;
        out.integer = text == "t" ? 1 : 0;
        return true;
      default:  // '_'
        out.type = Type::nil;
        return true;
    }
  }

 private:
  bool decode_bulk(Reply& out, Type type, std::int64_t length) {
    if (length < 0) return true;  // Reply defaults to null
    const auto size = static_cast<std::size_t>(length);
    out.type = type;
    out.text = input_.substr(pos_, size);
    pos_ += size + 2;
    return true;
  }

  bool decode_streamed_string(Reply& out) {
    out.type = Type::bulk;
    for (;;) {
      const std::size_t cr = input_.find("\r\n", pos_);
      const auto size =
          static_cast<std::size_t>(*detail::parse_int64(input_.substr(pos_ + 1, cr - pos_ - 1)));
      pos_ = cr + 2;
      if (size == 0) return true;
      out.text.append(input_.substr(pos_, size));
      pos_ += size + 2;
    }
  }

  bool decode_aggregate(Reply& out, Type type, std::int64_t count, std::size_t depth) {
    if (count < 0) return true;
    if (depth >= kMaxReplyDepth) return false;
    out.type = type;
    auto items = static_cast<std::size_t>(count);
    if (type == Type::map || type == Type::attribute) items *= 2;
    if (type == Type::attribute) ++items;
    // Safe to size from the wire here: the framer saw every one of these elements in the input.
    out.elements.resize(items);
    for (Reply& element : out.elements) {
      if (!decode(element, depth + 1)) return false;
    }
    return true;
  }

  bool decode_streamed(Reply& out, Type type, std::size_t depth) {
    if (depth >= kMaxReplyDepth) return false;
    out.type = type;
    while (input_[pos_] != '.') {
      if (!decode(out.elements.emplace_back(), depth + 1)) return false;
    }
    pos_ += 3;
    return true;
  }

  std::string_view input_;
  std::size_t pos_ = 0;
};

void append_line(std::string& out, char type, std::string_view text) {
  out.push_back(type);
  out.append(text);
  out.append("\r\n");
}

}  // namespace

std::optional<Reply> decode_reply(std::string_view bytes) {
  constexpr FrameLimits kUnlimited{std::numeric_limits<std::size_t>::max(),
                                   std::numeric_limits<std::size_t>::max()};
  const FrameResult frame = frame_reply(bytes, kUnlimited);
  if (frame.status != FrameStatus::complete || frame.size != bytes.size()) return std::nullopt;
  Reply reply;
  Decoder decoder(bytes);
  if (!decoder.decode(reply, 0)) return std::nullopt;
  return reply;
}

void append_reply(std::string& out, const Reply& reply) {
  if (const auto* line = by_type(kLines, reply.type)) {
    append_line(out, line->first, reply.text);
    return;
  }
  if (const auto* blob = by_type(kBlobs, reply.type)) {
    append_header(out, blob->first, reply.text.size());
    out.append(reply.text);
    out.append("\r\n");
    return;
  }
  if (const auto* aggregate = by_type(kAggregates, reply.type)) {
    std::size_t count = reply.elements.size();
    if (reply.type == Type::map) count /= 2;
    if (reply.type == Type::attribute) count = count == 0 ? 0 : (count - 1) / 2;
    append_header(out, aggregate->first, count);
    for (const Reply& element : reply.elements) append_reply(out, element);
    return;
  }
  switch (reply.type) {
    case Type::integer:
      append_integer(out, reply.integer);
      return;
    case Type::boolean:
      out.append(reply.integer != 0 ? "#t\r\n" : "#f\r\n");
      return;
    case Type::nil:
      out.append("_\r\n");
      return;
    default:
      append_null(out);
      return;
  }
}

bool is_resp2(const Reply& reply) {
  switch (reply.type) {
    case Type::simple:
    case Type::error:
    case Type::integer:
    case Type::bulk:
    case Type::null:
      return true;
    case Type::array:
      return std::all_of(reply.elements.begin(), reply.elements.end(), is_resp2);
    default:
      return false;
  }
}

}  // namespace corral::resp
