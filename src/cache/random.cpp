// The per-thread random source used in production.
#include "cache/random.hpp"

namespace corral::cache {

Random& thread_random() {
  thread_local SeededRandom random([] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }());
  return random;
}

}  // namespace corral::cache
