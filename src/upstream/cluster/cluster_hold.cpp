// The retry pass of held requests: each one is started again in queue order; those that still
// cannot go queue again in the same order, ahead of requests held meanwhile by others, and a
// request of a slot that one of them holds back waits behind it.
#include "upstream/cluster/cluster_hold.hpp"

#include <cassert>
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
  assert(slot >= 0);
  if (closed_) return command->abandon(ErrorKind::closed, kErrClosed);
  if (waiting_.empty()) {
    waiting_.assign(kSlotCount, 0);
    requeued_.assign(kSlotCount, 0);
  }
  ++waiting_[slot];
  if (command.get() == retrying_) {
    ++requeued_[slot];
    queue_.emplace_back(slot, std::move(command));
  } else {
    (in_pass_ ? arrivals_ : queue_).emplace_back(slot, std::move(command));
  }
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
  held.insert(held.end(), arrivals_.begin(), arrivals_.end());
  queue_.clear();
  arrivals_.clear();
  waiting_.clear();
  requeued_.clear();
  for (auto& [slot, command] : held) command->abandon(ErrorKind::closed, kErrClosed);
}

void ClusterHold::retry() {
  scheduled_ = false;
  in_pass_ = true;
  auto due = std::move(queue_);
  queue_.clear();
  for (auto& [slot, command] : due) {
    if (closed_) {  // closed by a reply's handler during the pass
      command->abandon(ErrorKind::closed, kErrClosed);
      continue;
    }
    --waiting_[slot];
    retrying_ = command.get();
    command->start();  // comes back through add() when it cannot go yet
    retrying_ = nullptr;
  }
  in_pass_ = false;
  for (const auto& [slot, command] : queue_) requeued_[slot] = 0;
  queue_.insert(queue_.end(), std::make_move_iterator(arrivals_.begin()),
                std::make_move_iterator(arrivals_.end()));
  arrivals_.clear();
}

}  // namespace corral::upstream
