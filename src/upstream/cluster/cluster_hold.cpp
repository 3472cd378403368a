// The retry pass of held requests: each one is started again in queue order; those that still
// cannot go queue again in the same order, and so does any request of a slot that one of them
// holds back.
#include "upstream/cluster/cluster_hold.hpp"

#include <chrono>

#include "upstream/cluster/cluster_command.hpp"
#include "upstream/cluster/cluster_links.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/errors.hpp"

namespace corral::upstream {

namespace {
// As often as a failover's progress is worth checking; the slot map refresh that names the
// promoted replica is rate-limited to one a second anyway.
constexpr std::chrono::milliseconds kHoldRetry{100};
}  // namespace

void ClusterHold::add(int slot, std::shared_ptr<ClusterCommand> command) {
  if (closed_) return command->abandon(ErrorKind::closed, kErrClosed);
  if (per_slot_.empty()) per_slot_.assign(kSlotCount, 0);
  ++per_slot_[slot];
  queue_.emplace_back(slot, std::move(command));
  if (scheduled_) return;
  scheduled_ = true;
  links_.run_after(kHoldRetry, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.lock()) retry();
  });
}

void ClusterHold::close() {
  closed_ = true;
  alive_.reset();
  auto held = std::move(queue_);
  queue_.clear();
  per_slot_.clear();
  for (auto& [slot, command] : held) command->abandon(ErrorKind::closed, kErrClosed);
}

void ClusterHold::retry() {
  scheduled_ = false;
  auto due = std::move(queue_);
  queue_.clear();
  for (const auto& [slot, command] : due) --per_slot_[slot];
  // A request that cannot go yet comes back through add(), behind the ones before it.
  for (auto& [slot, command] : due) command->start();
}

}  // namespace corral::upstream
