// SpaceSaving: a hash index onto counters kept in a binary min-heap, so a hit is one increment
// and a sift, and a new key replaces the root.
#include "stampede/core/space_saving.hpp"

#include <cassert>
#include <utility>

namespace corral::stampede {

SpaceSaving::SpaceSaving(std::size_t capacity, std::size_t max_key_bytes)
    : capacity_(capacity), max_key_bytes_(max_key_bytes) {
  assert(capacity > 0);
  counters_.reserve(capacity);
  heap_.reserve(capacity);
  position_.reserve(capacity);
  index_.reserve(capacity);
}

std::uint64_t SpaceSaving::floor() const {
  return counters_.size() < capacity_ ? 0 : counters_[heap_.front()].count;
}

void SpaceSaving::add(std::string_view key) {
  if (key.size() > max_key_bytes_) {
    ++untracked_;
    return;
  }
  if (const auto found = index_.find(key); found != index_.end()) {
    ++counters_[found->second].count;
    sift_down(position_[found->second]);
    return;
  }
  if (counters_.size() < capacity_) {
    const auto slot = static_cast<std::uint32_t>(counters_.size());
    counters_.push_back({std::string(key), 1, 0});
    heap_.push_back(slot);
    position_.push_back(slot);
    index_.emplace(counters_[slot].key, slot);
    // A count of 1 is the smallest there is: it rises to the root.
    for (std::size_t at = heap_.size() - 1; at > 0;) {
      const std::size_t parent = (at - 1) / 2;
      if (counters_[heap_[parent]].count <= 1) break;
      swap_heap(at, parent);
      at = parent;
    }
    return;
  }
  const std::uint32_t slot = heap_.front();
  Counter& victim = counters_[slot];
  // The victim's index node is reused for the newcomer: a full table allocates nothing.
  auto node = index_.extract(victim.key);
  // Grown to the exact size when it must grow (assign() may double it): the bound holds per key.
  if (key.size() > victim.key.capacity()) {
    victim.key = std::string(key);
  } else {
    victim.key.assign(key);
  }
  victim.error = victim.count;
  ++victim.count;
  node.key() = victim.key;
  node.mapped() = slot;
  index_.insert(std::move(node));
  sift_down(0);
}

void SpaceSaving::sift_down(std::size_t at) {
  for (;;) {
    const std::size_t left = 2 * at + 1;
    if (left >= heap_.size()) return;
    std::size_t smallest = left;
    const std::size_t right = left + 1;
    if (right < heap_.size() && counters_[heap_[right]].count < counters_[heap_[left]].count) {
      smallest = right;
    }
    if (counters_[heap_[at]].count <= counters_[heap_[smallest]].count) return;
    swap_heap(at, smallest);
    at = smallest;
  }
}

void SpaceSaving::swap_heap(std::size_t a, std::size_t b) {
  std::swap(heap_[a], heap_[b]);
  position_[heap_[a]] = static_cast<std::uint32_t>(a);
  position_[heap_[b]] = static_cast<std::uint32_t>(b);
}

}  // namespace corral::stampede
