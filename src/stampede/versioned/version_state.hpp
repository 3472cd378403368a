// The versions of a `versioned:` policy as this process last saw them: the pointer key's value
// and the version it replaced. Written by the pointer watch and CORRAL.ROLLOVER, read per request.
#pragma once

#include <atomic>
#include <cstdint>

namespace corral::stampede {

class VersionState {
 public:
  // 0: the pointer is not set (no version loaded yet).
  std::uint64_t current() const { return current_.load(std::memory_order_acquire); }
  // The fallback for keys missing in `current`; 0: none.
  std::uint64_t previous() const { return previous_.load(std::memory_order_acquire); }

  // Previous first: a reader that sees the new current must also see its fallback.
  void set(std::uint64_t current, std::uint64_t previous) {
    previous_.store(previous, std::memory_order_release);
    current_.store(current, std::memory_order_release);
  }

 private:
  std::atomic<std::uint64_t> current_{0};
  std::atomic<std::uint64_t> previous_{0};
};

}  // namespace corral::stampede
