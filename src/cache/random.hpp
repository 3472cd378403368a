// Injectable randomness for TTL jitter, XFetch draws and backoff jitter, so tests are
// deterministic with a fixed seed.
#pragma once

#include <cstdint>
#include <random>

namespace corral::cache {

// Contract: uniform() returns a double uniformly distributed in (0, 1]: never 0, so that ln(u)
// is always finite (XFetch takes the log of it). Implementations need not be thread-safe; give
// each thread its own instance (see thread_random()).
class Random {
 public:
  virtual ~Random() = default;
  virtual double uniform() = 0;
};

// std::mt19937_64 behind the interface. Not thread-safe: one instance per thread.
class SeededRandom final : public Random {
 public:
  explicit SeededRandom(std::uint64_t seed) : engine_(seed) {}
  double uniform() override {
    // The top 53 bits give k * 2^-53 in [0, 1) exactly (std::generate_canonical may round up to
    // 1.0 in libstdc++, LWG 2524); flipping it gives (0, 1].
    return 1.0 - static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  }

 private:
  std::mt19937_64 engine_;
};

// The calling thread's own SeededRandom, seeded once from std::random_device. Lock-free because
// each thread has its own engine; never share the reference with another thread.
Random& thread_random();

}  // namespace corral::cache
