// Collects the replies of a command split by slot or fanned out to every primary, and answers
// the client once, merged as the cluster routing table says (ClusterMerge).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/reply_target.hpp"

namespace corral::upstream {

// How the replies of a split or fanned-out command become the client's one reply.
enum class ClusterMerge : std::uint8_t {
  none,
  values_in_key_order,  // MGET: arrays, reassembled in the request's key order
  sum,                  // DEL UNLINK EXISTS TOUCH DBSIZE: integers added up
  all_ok,               // MSET FLUSHALL SCRIPT FLUSH: +OK when every part said OK
  concat,               // KEYS: arrays joined
  agree,                // SCRIPT LOAD/EXISTS, FUNCTION LOAD: every primary must answer alike
  // SCRIPT KILL, FUNCTION KILL: +OK when some primary killed one; NOTBUSY only when every
  // primary said so; else the first other error (UNKILLABLE ...), or the first failure.
  killed_anywhere,
};

// Contract: each part p in [0, parts) reports once through on_reply/on_failure(p); the client's
// slot is answered when the last one has. If a part fails, the client gets the first failing
// part's error (in part order), as Redis would have given one error for the whole command.
class ClusterMergeTarget final : public ReplyTarget {
 public:
  // `positions` (values_in_key_order only): per part, where its values go in the client's reply.
  ClusterMergeTarget(ClusterMerge merge, std::size_t parts,
                     std::vector<std::vector<std::size_t>> positions,
                     std::shared_ptr<ReplyTarget> client, std::uint64_t tag);

  void on_reply(std::uint64_t part, std::string_view reply) override;
  void on_failure(std::uint64_t part, std::string_view error) override;

  // The merged reply of `replies` (all of them non-error replies); nullopt with `error` set when
  // they cannot be merged. Public for tests.
  static std::optional<std::string> merge(ClusterMerge merge,
                                          const std::vector<std::string>& replies,
                                          const std::vector<std::vector<std::size_t>>& positions,
                                          std::string& error);

 private:
  void finish();

  ClusterMerge merge_;
  std::vector<std::vector<std::size_t>> positions_;
  std::shared_ptr<ReplyTarget> client_;
  std::uint64_t tag_;
  std::vector<std::string> replies_;
  std::vector<bool> failed_;  // the part's outcome is a failure (its text in replies_)
  std::size_t remaining_;
};

}  // namespace corral::upstream
