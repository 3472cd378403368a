// A Lua script run on the upstream Redis: EVALSHA once its digest is known, EVAL before that
// and whenever Redis answers NOSCRIPT (restarted, failed over or SCRIPT FLUSHed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "upstream/reply_target.hpp"

namespace corral::upstream {

class Connection;

// Shared by every io thread (a static per script is the intended use). The digest is learned
// from Redis (SCRIPT LOAD), so Corral needs no SHA-1 of its own.
class Script {
 public:
  explicit Script(std::string source) : source_(std::move(source)) {}
  Script(const Script&) = delete;
  Script& operator=(const Script&) = delete;

  // Sends the script with `keys` and `args` on `connection`; its reply (after at most one
  // NOSCRIPT retry) reaches target->on_reply(tag) or on_failure(tag), exactly once. Returns
  // false, having told nobody, when the connection is unavailable.
  bool run(Connection& connection, std::span<const std::string_view> keys,
           std::span<const std::string_view> args, std::shared_ptr<ReplyTarget> target,
           std::uint64_t tag) const;

  // The command to send now: EVALSHA when the digest is known, else EVAL (and, the first time, a
  // SCRIPT LOAD queued ahead of it on `connection` to learn the digest).
  std::string prepare(Connection& connection, std::span<const std::string_view> keys,
                      std::span<const std::string_view> args) const;
  // prepare() and run() for a caller that routes commands itself (a cluster node chosen by the
  // keys' slot): the SCRIPT LOAD, the command and its EVAL retry go through `send`. The digest is
  // the same on every node, so a node that lacks the script answers NOSCRIPT once and caches it
  // from the EVAL fallback.
  std::string prepare(const CommandSender& send, std::span<const std::string_view> keys,
                      std::span<const std::string_view> args) const;
  bool run(CommandSender send, std::span<const std::string_view> keys,
           std::span<const std::string_view> args, std::shared_ptr<ReplyTarget> target,
           std::uint64_t tag) const;
  static bool is_evalsha(std::string_view command);
  static bool is_noscript(std::string_view reply);

  const std::string& source() const { return source_; }
  // The EVAL form of an EVALSHA command run() built: the same keys and arguments.
  std::string as_eval(std::string_view evalsha) const;

 private:
  friend class ScriptDigestTarget;
  void learn(std::string_view digest) const;
  // EVALSHA with `digest`; EVAL with the source when it is empty.
  std::string command(std::string_view digest, std::span<const std::string_view> keys,
                      std::span<const std::string_view> args) const;

  std::string source_;
  mutable std::mutex mutex_;
  mutable std::string digest_;
  mutable bool loading_ = false;
};

}  // namespace corral::upstream
