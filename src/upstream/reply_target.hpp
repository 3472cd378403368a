// Where an upstream connection delivers the outcome of one command.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>

#include "slowlog/phases.hpp"
#include "upstream/errors.hpp"

namespace corral::upstream {

// Contract: exactly one of on_reply / on_failure / on_error is called per tracked command, in the
// order the commands were sent on that connection, on the connection's io thread.
class ReplyTarget {
 public:
  virtual ~ReplyTarget() = default;
  // `reply` is one complete RESP2 reply (possibly an error reply from Redis); valid only during the
  // call.
  virtual void on_reply(std::uint64_t tag, std::string_view reply) = 0;
  // The reply came, but the client's CLIENT REPLY mode withholds it: the client gets nothing, and
  // a wrapper that acts on what the reply says (EXEC's, for the commands queued in Corral) still
  // sees it and passes it on the same way.
  virtual void on_withheld_reply(std::uint64_t tag, std::string_view /*reply*/) {
    on_reply(tag, {});
  }
  // No reply will come: `error` is the text of an error line without the leading '-' (e.g.
  // "ERR upstream connection lost"). The command may or may not have run on Redis.
  virtual void on_failure(std::uint64_t tag, std::string_view error) = 0;
  // No reply will come, and what happened is known as a kind (a connection's failures carry
  // one). Targets that decide by kind override it; others get on_failure with the text.
  virtual void on_error(std::uint64_t tag, ErrorKind /*kind*/, std::string_view error) {
    on_failure(tag, error);
  }
  // Where a cached read's time went (the slowlog's phases), told just before its on_reply /
  // on_failure by the layer that measured it; a wrapper passes it on to the target it wraps.
  // Targets that keep no slowlog ignore it.
  virtual void note_phases(std::uint64_t /*tag*/, const slowlog::Phases& /*phases*/) {}
};

// For Corral's own commands: one callable receives the reply, or the error text when `failed`.
class CallbackTarget final : public ReplyTarget {
 public:
  using Callback = std::function<void(std::string_view reply, bool failed)>;
  explicit CallbackTarget(Callback done) : done_(std::move(done)) {}
  static std::shared_ptr<CallbackTarget> make(Callback done) {
    return std::make_shared<CallbackTarget>(std::move(done));
  }

  void on_reply(std::uint64_t, std::string_view reply) override { done_(reply, false); }
  void on_failure(std::uint64_t, std::string_view error) override { done_(error, true); }

 private:
  Callback done_;
};

// For replies nobody waits for (ASKING's +OK, a replayed MULTI's answers the client had already).
class DiscardTarget final : public ReplyTarget {
 public:
  void on_reply(std::uint64_t, std::string_view) override {}
  void on_failure(std::uint64_t, std::string_view) override {}
};

// Queues one command on some connection (one chosen by the sender: a server, a cluster slot's
// node); its outcome then reaches target->on_*(tag) exactly once. False: nothing was queued.
using CommandSender = std::function<bool(std::string_view command,
                                         std::shared_ptr<ReplyTarget> target, std::uint64_t tag)>;

}  // namespace corral::upstream
