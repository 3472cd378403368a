// Builds a Reply tree from one framed RESP2 reply. Validation is left to frame_reply, so the
// recursive descent here only has to bound its depth.
#include "resp/reply.hpp"

#include <limits>

#include "resp/encoder.hpp"
#include "resp/int_parse.hpp"
#include "resp/reply_framer.hpp"

namespace corral::resp {
namespace {

class Decoder {
 public:
  explicit Decoder(std::string_view input) : input_(input) {}

  // `depth` counts the arrays enclosing the item at pos_.
  bool decode(Reply& out, std::size_t depth) {
    const char type = input_[pos_];
    // The framer has checked every line, so its first CRLF is its end and numbers parse.
    const std::size_t cr = input_.find("\r\n", pos_);
    const std::string_view text = input_.substr(pos_ + 1, cr - pos_ - 1);
    pos_ = cr + 2;
    switch (type) {
      case '+':
        out.type = Reply::Type::simple;
        out.text = text;
        return true;
      case '-':
        out.type = Reply::Type::error;
        out.text = text;
        return true;
      case ':':
        out.type = Reply::Type::integer;
        out.integer = *detail::parse_int64(text);
        return true;
      case '$':
        return decode_bulk(out, *detail::parse_int64(text));
      default:
        return decode_array(out, *detail::parse_int64(text), depth);
    }
  }

 private:
  bool decode_bulk(Reply& out, std::int64_t length) {
    if (length < 0) return true;  // Reply defaults to null
    const auto size = static_cast<std::size_t>(length);
    out.type = Reply::Type::bulk;
    out.text = input_.substr(pos_, size);
    pos_ += size + 2;
    return true;
  }

  bool decode_array(Reply& out, std::int64_t count, std::size_t depth) {
    if (count < 0) return true;
    if (depth >= kMaxReplyDepth) return false;
    out.type = Reply::Type::array;
    // Safe to size from the wire here: the framer saw every one of these elements in the input.
    out.elements.resize(static_cast<std::size_t>(count));
    for (Reply& element : out.elements) {
      if (!decode(element, depth + 1)) return false;
    }
    return true;
  }

  std::string_view input_;
  std::size_t pos_ = 0;
};

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
  switch (reply.type) {
    case Reply::Type::simple:
      append_simple(out, reply.text);
      return;
    case Reply::Type::error:
      append_error(out, reply.text);
      return;
    case Reply::Type::integer:
      append_integer(out, reply.integer);
      return;
    case Reply::Type::bulk:
      append_bulk(out, reply.text);
      return;
    case Reply::Type::null:
      append_null(out);
      return;
    case Reply::Type::array:
      append_array_header(out, reply.elements.size());
      for (const Reply& element : reply.elements) append_reply(out, element);
      return;
  }
}

}  // namespace corral::resp
