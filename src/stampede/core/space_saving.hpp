// Space-Saving (Metwally, Agrawal, El Abbadi, ICDT 2005): the heaviest keys of a stream in a fixed
// number of counters. A key not counted takes the smallest counter's place and inherits its count
// as its error, so every estimate over-counts by at most its error: true count is in
// [count - error, count], and any key seen more than N / capacity times is held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace corral::stampede {

class SpaceSaving {
 public:
  struct Counter {
    std::string key;
    std::uint64_t count = 0;
    std::uint64_t error = 0;
  };

  // Keys longer than `max_key_bytes` are not held (counted in untracked()): the memory stays
  // within capacity * (max_key_bytes + kOverheadPerCounter) bytes whatever the stream (measured
  // with malloc's own figures by the unit test).
  static constexpr std::size_t kOverheadPerCounter = 160;
  SpaceSaving(std::size_t capacity, std::size_t max_key_bytes);
  SpaceSaving(const SpaceSaving&) = delete;
  SpaceSaving& operator=(const SpaceSaving&) = delete;
  SpaceSaving(SpaceSaving&&) = default;
  SpaceSaving& operator=(SpaceSaving&&) = default;

  void add(std::string_view key);
  // The count a key not held may have had: the smallest counter's once all are taken, else 0.
  std::uint64_t floor() const;
  bool holds(std::string_view key) const { return index_.contains(key); }
  const std::vector<Counter>& counters() const { return counters_; }  // in no order
  std::uint64_t untracked() const { return untracked_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t max_key_bytes() const { return max_key_bytes_; }

 private:
  void sift_down(std::size_t at);
  void swap_heap(std::size_t a, std::size_t b);

  std::size_t capacity_;
  std::size_t max_key_bytes_;
  std::vector<Counter> counters_;        // reserved once: the index's views into keys stay valid
  std::vector<std::uint32_t> heap_;      // counter indices, smallest count first
  std::vector<std::uint32_t> position_;  // counter index -> its place in heap_
  std::unordered_map<std::string_view, std::uint32_t> index_;
  std::uint64_t untracked_ = 0;
};

}  // namespace corral::stampede
