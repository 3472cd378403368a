// RESP3 clients: push-confirmed commands and the RESP2 -> RESP3 conversion of cached replies.
#include "proxy/resp3.hpp"

#include <algorithm>

#include "proxy/ascii.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"

namespace corral::proxy {

namespace {

using resp::Reply;

bool has_withscores(std::span<const std::string_view> argv) {
  return std::any_of(argv.begin(), argv.end(),
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

class Resp3Target final : public upstream::ReplyTarget {
 public:
  Resp3Target(std::shared_ptr<upstream::ReplyTarget> client, std::string_view command,
              std::span<const std::string_view> argv)
      : client_(std::move(client)), command_(command), argv_(argv.begin(), argv.end()) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    std::vector<std::string_view> argv(argv_.begin(), argv_.end());
    std::string converted;
    append_as_resp3(converted, command_, argv, reply);
    client_->on_reply(tag, converted);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
  std::string command_;
  std::vector<std::string> argv_;
};

}  // namespace

bool replies_with_pushes(const CommandSpec& row) {
  return row.change == StateChange::subscribe ||
         ((row.flags & kPubSub) && row.name.ends_with("unsubscribe"));
}

void append_as_resp3(std::string& out, std::string_view command,
                     std::span<const std::string_view> argv, std::string_view resp2_reply) {
  if (resp2_reply == "$-1\r\n" || resp2_reply == "*-1\r\n") {
    out.append("_\r\n");
    return;
  }
  // Strings, integers and errors read the same in both protocols.
  if (!resp2_reply.starts_with('*')) {
    out.append(resp2_reply);
    return;
  }
  if (command == "hgetall") return append_retyped(out, '%', resp2_reply);
  if (command == "smembers") return append_retyped(out, '~', resp2_reply);
  const auto decoded = resp::decode_reply(resp2_reply);
  if (!decoded) {
    out.append(resp2_reply);
    return;
  }
  if (command == "zrange" && has_withscores(argv)) return append_score_pairs(out, *decoded);
  append_with_nils(out, *decoded);
}

std::shared_ptr<upstream::ReplyTarget> resp3_target(std::shared_ptr<upstream::ReplyTarget> client,
                                                    std::string_view command,
                                                    std::span<const std::string_view> argv) {
  return std::make_shared<Resp3Target>(std::move(client), command, argv);
}

}  // namespace corral::proxy
