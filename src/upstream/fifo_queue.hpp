// A first-in first-out queue over one vector whose storage is reused: a connection's commands in
// flight pass through it with no allocation once it has grown to the deepest pipeline seen.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace corral::upstream {

// std::deque allocates a block each time its back crosses into a new one and frees each block its
// front leaves (a 40-byte element: one malloc per 12 pushes, for good). Here popped slots are
// reset and skipped; the live ones move to the front once the skipped ones are at least half.
template <class T>
class FifoQueue {
 public:
  FifoQueue() = default;
  FifoQueue(FifoQueue&& other) noexcept
      : items_(std::move(other.items_)), head_(std::exchange(other.head_, 0)) {
    other.items_.clear();
  }
  FifoQueue& operator=(FifoQueue&& other) noexcept {
    items_ = std::move(other.items_);
    head_ = std::exchange(other.head_, 0);
    other.items_.clear();
    return *this;
  }
  FifoQueue(const FifoQueue&) = delete;
  FifoQueue& operator=(const FifoQueue&) = delete;

  bool empty() const { return head_ == items_.size(); }
  std::size_t size() const { return items_.size() - head_; }
  // Slots held, live or skipped: what the queue keeps allocated.
  std::size_t capacity() const { return items_.capacity(); }

  void push_back(T item) { items_.push_back(std::move(item)); }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  void pop_front() {
    items_[head_] = T{};  // what it owns goes now, as with a deque
    ++head_;
    if (head_ == items_.size()) {
      clear();
    } else if (head_ * 2 >= items_.size() && head_ >= kCompactAfter) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  void clear() {
    items_.clear();  // keeps the capacity
    head_ = 0;
  }

  auto begin() { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  auto end() { return items_.end(); }

 private:
  // Below this many skipped slots the queue waits for the next time it empties.
  static constexpr std::size_t kCompactAfter = 32;
  std::vector<T> items_;
  std::size_t head_ = 0;
};

}  // namespace corral::upstream
