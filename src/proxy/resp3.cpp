// RESP3 clients: push-confirmed commands and the RESP2 -> RESP3 conversion of cached replies.
#include "proxy/resp3.hpp"

#include <algorithm>

#include "proxy/ascii.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"

namespace corral::proxy {

namespace {

using resp::Reply;

// ZRANGE key start stop [options]: only options count, so a key named "withscores" does not.
bool has_withscores(std::span<const std::string_view> argv) {
  constexpr std::size_t kFirstOption = 4;
  return argv.size() > kFirstOption &&
         std::any_of(argv.begin() + kFirstOption, argv.end(),
                     [](std::string_view arg) { return iequals(arg, "withscores"); });
}

// Nulls become RESP3's `_`, at any depth (MGET, HMGET elements).
void append_with_nils(std::string& out, const Reply& reply) {
  if (reply.type == Reply::Type::null) {
    out.append("_\r\n");
  } else if (reply.type == Reply::Type::array) {
    resp::append_array_header(out, reply.elements.size());
    for (const Reply& element : reply.elements) append_with_nils(out, element);
  } else {
    resp::append_reply(out, reply);
  }
}

// RESP2 "member score member score" -> RESP3 [[member, score-as-double] ...], as ZRANGE answers.
void append_score_pairs(std::string& out, const Reply& reply) {
  resp::append_array_header(out, reply.elements.size() / 2);
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    resp::append_array_header(out, 2);
    resp::append_reply(out, reply.elements[i]);
    out.push_back(',');
    out.append(reply.elements[i + 1].text);
    out.append("\r\n");
  }
}

// Replaces the array header of `reply` with `type`'s: the elements stay as they are.
void append_retyped(std::string& out, char type, std::string_view reply) {
  const auto cr = reply.find("\r\n");
  out.push_back(type);
  if (type == '%') {
    // "*2N" -> "%N": the count of pairs.
    const auto count = std::stoull(std::string(reply.substr(1, cr - 1)));
    out.append(std::to_string(count / 2));
  } else {
    out.append(reply.substr(1, cr - 1));
  }
  out.append(reply.substr(cr));
}

// The shape a cached command's reply takes in RESP3 beyond RESP2's (nulls aside).
enum class Shape : std::uint8_t { plain, map, set, score_pairs };

Shape shape_of(std::string_view command, std::span<const std::string_view> argv) {
  if (command == "hgetall") return Shape::map;
  if (command == "smembers") return Shape::set;
  if (command == "zrange" && has_withscores(argv)) return Shape::score_pairs;
  return Shape::plain;
}

void append_shaped(std::string& out, Shape shape, std::string_view resp2_reply) {
  if (resp2_reply == "$-1\r\n" || resp2_reply == "*-1\r\n") {
    out.append("_\r\n");
    return;
  }
  // Strings, integers and errors read the same in both protocols.
  if (!resp2_reply.starts_with('*')) {
    out.append(resp2_reply);
    return;
  }
  if (shape == Shape::map) return append_retyped(out, '%', resp2_reply);
  if (shape == Shape::set) return append_retyped(out, '~', resp2_reply);
  const auto decoded = resp::decode_reply(resp2_reply);
  if (!decoded) {
    out.append(resp2_reply);
    return;
  }
  if (shape == Shape::score_pairs) return append_score_pairs(out, *decoded);
  append_with_nils(out, *decoded);
}

// Held per cached read of a RESP3 client: a hit on a string (the common case) passes through.
class Resp3Target final : public upstream::ReplyTarget {
 public:
  Resp3Target(std::shared_ptr<upstream::ReplyTarget> client, Shape shape)
      : client_(std::move(client)), shape_(shape) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (!reply.starts_with('*') && reply != "$-1\r\n") {
      client_->on_reply(tag, reply);
      return;
    }
    std::string converted;
    append_shaped(converted, shape_, reply);
    client_->on_reply(tag, converted);
  }
  void note_phases(std::uint64_t tag, const slowlog::Phases& phases) override {
    client_->note_phases(tag, phases);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
  Shape shape_;
};

}  // namespace

bool replies_with_pushes(const CommandSpec& row) {
  return row.change == StateChange::subscribe ||
         ((row.flags & kPubSub) && row.name.ends_with("unsubscribe"));
}

void append_as_resp3(std::string& out, std::string_view command,
                     std::span<const std::string_view> argv, std::string_view resp2_reply) {
  append_shaped(out, shape_of(command, argv), resp2_reply);
}

std::shared_ptr<upstream::ReplyTarget> resp3_target(std::shared_ptr<upstream::ReplyTarget> client,
                                                    std::string_view command,
                                                    std::span<const std::string_view> argv) {
  return std::make_shared<Resp3Target>(std::move(client), shape_of(command, argv));
}

}  // namespace corral::proxy
