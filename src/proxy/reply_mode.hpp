// CLIENT REPLY ON|OFF|SKIP emulated per client: Corral withholds the replies Redis would not send,
// so the client's commands keep their usual connections and Corral still answers its own ones.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "upstream/reply_target.hpp"

namespace corral::proxy {

enum class ReplyMode : std::uint8_t {
  on,
  off,        // no reply until CLIENT REPLY ON
  skip_next,  // the next command's reply is withheld, then back to on
};

// ON, OFF or SKIP, in any case: the words CLIENT REPLY takes.
bool is_reply_mode_word(std::string_view word);

// The mode after `CLIENT REPLY <word>` in mode `current` (the word already checked by the
// caller). As in Redis, SKIP while OFF changes nothing, and ON always answers.
ReplyMode after_client_reply(ReplyMode current, std::string_view word);

// Whether a command sent in mode `mode` gets its reply, and the mode for the command after it.
struct ReplyDecision {
  bool replies;
  ReplyMode next;
};
ReplyDecision decide_reply(ReplyMode mode);

// Completes a request's reply slot with nothing once its outcome is known: the command runs (and
// the client's later commands wait for it as usual), but its reply, or error, is withheld.
class WithheldReply final : public upstream::ReplyTarget {
 public:
  explicit WithheldReply(std::shared_ptr<upstream::ReplyTarget> client)
      : client_(std::move(client)) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    client_->on_withheld_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view) override { client_->on_reply(tag, {}); }

 private:
  std::shared_ptr<upstream::ReplyTarget> client_;
};

}  // namespace corral::proxy
