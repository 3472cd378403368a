// InputBuffer storage: kBlock-sized blocks are recycled through a small per-thread cache, so a
// request/response client that goes idle after every reply costs no malloc per request.
#include "session/input_buffer.hpp"

#include <cstring>
#include <vector>

namespace corral::session {

namespace {
constexpr std::size_t kMinReadSpace = 4 * 1024;
// Blocks kept per thread: enough for the clients that go idle and come back within a burst.
constexpr std::size_t kCachedBlocks = 256;

std::vector<std::unique_ptr<char[]>>& block_cache() {
  thread_local std::vector<std::unique_ptr<char[]>> cache;
  return cache;
}

std::unique_ptr<char[]> take_block() {
  auto& cache = block_cache();
  if (cache.empty()) return std::make_unique_for_overwrite<char[]>(InputBuffer::kBlock);
  auto block = std::move(cache.back());
  cache.pop_back();
  return block;
}
}  // namespace

char* InputBuffer::space() {
  if (!data_) {
    data_ = take_block();
    capacity_ = kBlock;
  }
  if (begin_ == end_) begin_ = end_ = 0;
  if (capacity_ - end_ >= kMinReadSpace) return data_.get() + end_;
  if (begin_ > 0) {
    std::memmove(data_.get(), data_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (capacity_ - end_ < kMinReadSpace) {
    auto larger = std::make_unique_for_overwrite<char[]>(capacity_ * 2);
    std::memcpy(larger.get(), data_.get(), end_);
    // A block outgrown by a large request goes back to the cache rather than to malloc.
    if (capacity_ == kBlock && block_cache().size() < kCachedBlocks) {
      block_cache().push_back(std::move(data_));
    }
    data_ = std::move(larger);
    capacity_ *= 2;
  }
  return data_.get() + end_;
}

void InputBuffer::release() {
  if (!data_ || begin_ != end_) return;
  if (capacity_ == kBlock && block_cache().size() < kCachedBlocks) {
    block_cache().push_back(std::move(data_));
  }
  data_.reset();
  capacity_ = begin_ = end_ = 0;
}

}  // namespace corral::session
