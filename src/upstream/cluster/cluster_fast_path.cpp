// The direct send of keyed cluster commands and the hand-over of the rare one that needs
// redirect handling.
#include "upstream/cluster/cluster_fast_path.hpp"

#include <utility>

namespace corral::upstream {

namespace {
// A buffer that held a large request is given back rather than kept for the next command.
constexpr std::size_t kKeptCommandCapacity = 4096;
}  // namespace

std::uint32_t ClusterFastPath::acquire() {
  if (!free_.empty()) {
    const std::uint32_t index = free_.back();
    free_.pop_back();
    return index;
  }
  entries_.emplace_back();
  return static_cast<std::uint32_t>(entries_.size() - 1);
}

void ClusterFastPath::release(std::uint32_t index) {
  Entry& entry = entries_[index];
  entry.target.reset();
  if (entry.command.capacity() > kKeptCommandCapacity) std::string().swap(entry.command);
  free_.push_back(index);
}

bool ClusterFastPath::send(Link& link, std::string_view command,
                           const ClusterCommandOptions& options,
                           const std::shared_ptr<ReplyTarget>& target, std::uint64_t tag) {
  const std::uint32_t index = acquire();
  Entry& entry = entries_[index];
  entry.target = target;
  entry.tag = tag;
  entry.command.assign(command);
  entry.options = options;
  if (link.send(entry.command, shared_from_this(), index)) return true;
  release(index);
  return false;
}

std::shared_ptr<ClusterCommand> ClusterFastPath::hand_over(std::uint32_t index) {
  Entry& entry = entries_[index];
  auto command = std::make_shared<ClusterCommand>(links_, entry.command, entry.options,
                                                  std::move(entry.target), entry.tag);
  release(index);
  return command;
}

void ClusterFastPath::on_reply(std::uint64_t entry, std::string_view reply) {
  const auto index = static_cast<std::uint32_t>(entry);
  if (cluster_handling(reply)) return hand_over(index)->on_reply(0, reply);
  // The target may send more commands from here (a session dispatching its next request),
  // which may grow entries_: nothing of this entry is touched after the call.
  auto target = std::move(entries_[index].target);
  const std::uint64_t tag = entries_[index].tag;
  release(index);
  target->on_reply(tag, reply);
}

void ClusterFastPath::on_failure(std::uint64_t entry, std::string_view error) {
  hand_over(static_cast<std::uint32_t>(entry))->on_failure(0, error);
}

void ClusterFastPath::on_error(std::uint64_t entry, ErrorKind kind, std::string_view error) {
  hand_over(static_cast<std::uint32_t>(entry))->on_error(0, kind, error);
}

}  // namespace corral::upstream
