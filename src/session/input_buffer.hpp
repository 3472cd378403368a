// A client's input bytes: empty (no memory at all) while the client is idle, a block from a
// per-thread cache while requests arrive, and larger only for as long as a large request needs.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace corral::session {

class InputBuffer {
 public:
  // The block size taken from (and given back to) the thread's cache.
  static constexpr std::size_t kBlock = 16 * 1024;

  InputBuffer() = default;
  ~InputBuffer() { release(); }
  InputBuffer(const InputBuffer&) = delete;
  InputBuffer& operator=(const InputBuffer&) = delete;

  // Bytes received and not yet consumed.
  std::string_view pending() const { return {data_.get() + begin_, end_ - begin_}; }
  bool empty() const { return begin_ == end_; }
  void consume(std::size_t n) { begin_ += n; }

  // Room to read into: at least a few KB, moving pending bytes to the front or growing
  // geometrically when a request is larger than the buffer (the session bounds request size).
  char* space();
  std::size_t space_size() const { return capacity_ - end_; }
  void commit(std::size_t n) { end_ += n; }

  // Gives the memory back once nothing is pending: an idle client holds no buffer.
  void release();
  std::size_t capacity() const { return capacity_; }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

}  // namespace corral::session
