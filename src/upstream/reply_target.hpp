// Where an upstream connection delivers the outcome of one command.
#pragma once

#include <cstdint>
#include <string_view>

namespace corral::upstream {

// Contract: exactly one of on_reply / on_failure is called per tracked command, in the order the
// commands were sent on that connection, on the connection's io thread.
class ReplyTarget {
 public:
  virtual ~ReplyTarget() = default;
  // `reply` is one complete RESP2 reply (possibly an error reply from Redis); valid only during the
  // call.
  virtual void on_reply(std::uint64_t tag, std::string_view reply) = 0;
  // No reply will come: `error` is the text of an error line without the leading '-' (e.g.
  // "ERR upstream connection lost"). The command may or may not have run on Redis.
  virtual void on_failure(std::uint64_t tag, std::string_view error) = 0;
};

}  // namespace corral::upstream
