// Counters bumped on every cached read by every io thread, kept per thread so that counting a hit
// never moves a cache line between cores; a reader sums the threads' lines.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace corral::stampede {

namespace detail {
// A small number per thread, handed out in order of first use; io threads get distinct ones.
inline std::size_t counter_slot_of_this_thread() {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t slot = next.fetch_add(1, std::memory_order_relaxed);
  return slot;
}
}  // namespace detail

// Contract: add() from any thread, sum() from any thread; sums are exact when the counters are
// quiet and never lose an increment (threads beyond kSlots share a slot, still atomically).
template <std::size_t N>
class ThreadCounters {
 public:
  static constexpr std::size_t kSlots = 16;

  void add(std::size_t index, std::uint64_t n = 1) {
    slots_[detail::counter_slot_of_this_thread() % kSlots].values[index].fetch_add(
        n, std::memory_order_relaxed);
  }
  std::uint64_t sum(std::size_t index) const {
    std::uint64_t total = 0;
    for (const Slot& slot : slots_) total += slot.values[index].load(std::memory_order_relaxed);
    return total;
  }

 private:
  // One cache line (or more) per slot: neighbouring threads never share a line.
  struct alignas(64) Slot {
    std::array<std::atomic<std::uint64_t>, N> values{};
  };
  std::array<Slot, kSlots> slots_{};
};

}  // namespace corral::stampede
