// The registry of tracking gaps: a short list under a mutex, read only while some gap is open.
#include "stampede/tracking/tracking_gaps.hpp"

#include <algorithm>

namespace corral::stampede {

std::uint64_t TrackingGaps::open(Covers covers) {
  std::lock_guard lock(mutex_);
  const auto id = next_id_++;
  gaps_.emplace_back(id, std::move(covers));
  open_gaps_.store(static_cast<int>(gaps_.size()), std::memory_order_relaxed);
  return id;
}

void TrackingGaps::close(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  std::erase_if(gaps_, [id](const auto& gap) { return gap.first == id; });
  open_gaps_.store(static_cast<int>(gaps_.size()), std::memory_order_relaxed);
}

bool TrackingGaps::covers(std::string_view user_key) const {
  std::lock_guard lock(mutex_);
  return std::any_of(gaps_.begin(), gaps_.end(),
                     [user_key](const auto& gap) { return gap.second(user_key); });
}

}  // namespace corral::stampede
