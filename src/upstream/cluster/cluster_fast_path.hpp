// Keyed cluster commands sent straight to their slot's owner, without a ClusterCommand each: the
// common case (the owner is known and its connection is up) costs no allocation. A reply that asks
// for redirect handling (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) or a failure turns that one command
// into a ClusterCommand, which follows it exactly as if it had sent the command itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

// One per io thread (the cluster router's). The tag a link sees is the index of the command's
// entry here; entries and their byte buffers are reused, so a steady load allocates nothing.
class ClusterFastPath final : public ReplyTarget,
                              public std::enable_shared_from_this<ClusterFastPath> {
 public:
  explicit ClusterFastPath(ClusterLinks& links) : links_(links) {}

  // Queues `command` on `link` (the connection to the slot's owner); its outcome reaches
  // target->on_*(tag) exactly once. False, with nothing sent, when the link refuses it.
  bool send(Link& link, std::string_view command, const ClusterCommandOptions& options,
            const std::shared_ptr<ReplyTarget>& target, std::uint64_t tag);

  void on_reply(std::uint64_t entry, std::string_view reply) override;
  void on_failure(std::uint64_t entry, std::string_view error) override;
  void on_error(std::uint64_t entry, ErrorKind kind, std::string_view error) override;

  // Commands sent and not answered yet.
  std::size_t in_flight() const { return entries_.size() - free_.size(); }

 private:
  struct Entry {
    std::shared_ptr<ReplyTarget> target;
    std::uint64_t tag = 0;
    std::string command;  // kept for a redirect's re-send; its capacity is reused
    ClusterCommandOptions options;
  };
  std::uint32_t acquire();
  void release(std::uint32_t index);
  // The command of `index` as a ClusterCommand that takes over from here.
  std::shared_ptr<ClusterCommand> hand_over(std::uint32_t index);

  ClusterLinks& links_;
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_;
};

}  // namespace corral::upstream
