// The registry of fleet waiters by key; see fleet_wakeups.hpp.
#include "stampede/fleet/fleet_wakeups.hpp"

#include <utility>
#include <vector>

namespace corral::stampede {

FleetWakeups::Watch::Watch(FleetWakeups& owner, std::string key, Wake wake)
    : owner_(owner), key_(std::move(key)) {
  std::lock_guard lock(owner_.mutex_);
  id_ = owner_.next_id_++;
  owner_.waiters_.emplace(key_, Entry{id_, std::move(wake)});
}

FleetWakeups::Watch::~Watch() {
  std::lock_guard lock(owner_.mutex_);
  auto [first, last] = owner_.waiters_.equal_range(key_);
  for (; first != last; ++first) {
    if (first->second.id == id_) {
      owner_.waiters_.erase(first);
      return;
    }
  }
}

void FleetWakeups::notify(std::string_view key) {
  std::vector<Wake> wakes;
  {
    std::lock_guard lock(mutex_);
    if (waiters_.empty()) return;
    auto [first, last] = waiters_.equal_range(key);
    for (; first != last; ++first) wakes.push_back(first->second.wake);
  }
  for (const auto& wake : wakes) wake();
}

void FleetWakeups::notify_all() {
  std::vector<Wake> wakes;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, entry] : waiters_) wakes.push_back(entry.wake);
  }
  for (const auto& wake : wakes) wake();
}

void FleetWakeups::source_added() {
  std::lock_guard lock(mutex_);
  ++sources_;
}

void FleetWakeups::source_removed() {
  std::lock_guard lock(mutex_);
  --sources_;
}

void FleetWakeups::source_live(bool live) {
  std::lock_guard lock(mutex_);
  live_sources_ += live ? 1 : -1;
}

bool FleetWakeups::live() const {
  std::lock_guard lock(mutex_);
  return sources_ > 0 && live_sources_ >= sources_;
}

std::size_t FleetWakeups::watching() const {
  std::lock_guard lock(mutex_);
  return waiters_.size();
}

}  // namespace corral::stampede
