// Grouping keys by slot in the order each slot first appears, so parts go out in request order.
#include "upstream/cluster/cluster_split.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "resp/encoder.hpp"
#include "upstream/cluster/key_slot.hpp"

namespace corral::upstream {

void send_split_by_slot(ClusterLinks& links, std::span<const std::string_view> argv,
                        std::span<const std::size_t> keys, std::size_t group, ClusterMerge merge,
                        ClusterCommandOptions options, const std::shared_ptr<ReplyTarget>& target,
                        std::uint64_t tag) {
  std::vector<int> slots;
  std::vector<std::vector<std::size_t>> members;  // per part: indices into keys
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const int slot = key_slot(argv[keys[k]]);
    const auto it = std::find(slots.begin(), slots.end(), slot);
    if (it == slots.end()) {
      slots.push_back(slot);
      members.push_back({k});
    } else {
      members[it - slots.begin()].push_back(k);
    }
  }
  auto merged = std::make_shared<ClusterMergeTarget>(merge, slots.size(), members, target, tag);
  std::vector<std::string_view> sub;
  for (std::size_t part = 0; part < slots.size(); ++part) {
    sub.assign(1, argv[0]);
    for (const std::size_t k : members[part]) {
      for (std::size_t i = 0; i < group; ++i) sub.push_back(argv[keys[k] + i]);
    }
    std::string command;
    resp::append_command(command, sub);
    options.slot = slots[part];
    std::make_shared<ClusterCommand>(links, std::move(command), options, merged, part)->start();
  }
}

}  // namespace corral::upstream
