// Whether a client's upstream ACL user may read a key the cache could answer for: a value cached
// from one user's read reaches another user only if the upstream says that user may run the
// command on that key (ACL DRYRUN). Until it has said so, the read goes to the upstream as the
// user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proxy/commands/command_table.hpp"

namespace corral::upstream {
class ReplyTarget;
class Upstream;
}  // namespace corral::upstream

namespace corral::proxy {

// Everything learned of the upstream's ACL rules is forgotten (on every io thread) when they may
// have changed: a SIGHUP reload, or an ACL command that went through Corral.
void forget_acl_rules();

// `target`, after forgetting the rules again when the reply comes: by then the command that may
// change them (or the EXEC that ran it, queued) has run, and a DRYRUN that Redis answered in
// between, on another connection, was judged by the old rules.
std::shared_ptr<upstream::ReplyTarget> forget_acl_rules_at_reply(
    std::shared_ptr<upstream::ReplyTarget> target);

class AclVerdicts {
 public:
  // `unavailable`: the upstream could not be asked (may_run only).
  enum class Verdict : std::uint8_t { pending, allowed, denied, unavailable };
  using Table = std::unordered_map<std::string, Verdict>;

  // DRYRUN questions go through `upstream` (Corral's own user, which needs +acl|dryrun); at most
  // `capacity` verdicts are kept (then they are all dropped and learned again).
  AclVerdicts(upstream::Upstream& upstream, std::size_t capacity);

  // True only when the upstream has said `user` may run `row` with every key of `argv`. Any key
  // not yet asked about is asked now, in the background: the caller forwards this request.
  bool may_serve_cached(std::string_view user, const CommandSpec& row,
                        std::span<const std::string_view> argv);

  // Whether `user` may run a command Corral answers itself (CLIENT LIST, INFO, SLOWLOG, MONITOR,
  // PING ...) as the upstream would judge it, so that answering locally widens no one's rights.
  // Keyed by the command and, for a command without subcommands (PING and ECHO aside), its first
  // argument (what Redis 7.0's first-argument rules look at); `pending` until the upstream's ACL
  // DRYRUN answers.
  Verdict may_run(std::string_view user, const CommandSpec& row,
                  std::span<const std::string_view> argv);

  // An ACL command that may change users: every ACL subcommand but WHOAMI, CAT, GENPASS and HELP,
  // which are not kDangerous. Inline: the flag test is all most commands cost.
  static bool changes_rules(const CommandSpec& row) {
    return (row.flags & kDangerous) && row.name.starts_with("acl|");
  }

  std::size_t size() const { return table_->size(); }

 private:
  // Drops what was learned when the rules may have changed, or when the table is full.
  void renew_if_stale();
  // Asks `question` (ACL DRYRUN ...) and records the answer under `entry`; false when the
  // upstream cannot be asked now.
  bool ask(std::string entry, std::span<const std::string_view> question);

  upstream::Upstream& upstream_;
  std::size_t capacity_;
  std::uint64_t epoch_;
  // Shared with the DRYRUN replies in flight, which find it replaced after a forget.
  std::shared_ptr<Table> table_ = std::make_shared<Table>();
  std::vector<std::size_t> keys_;
  std::string entry_;
};

}  // namespace corral::proxy
