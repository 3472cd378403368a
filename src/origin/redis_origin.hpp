// The `redis` origin: misses and refreshes are read from the upstream Redis itself (the io
// thread's Upstream: its shared pipelined connection, or a cluster slot's node), so Corral is a
// near-cache in front of Redis.
#pragma once

#include <memory>
#include <string>

#include "cache/clock.hpp"
#include "origin/origin.hpp"

namespace corral::upstream {
class Upstream;
}  // namespace corral::upstream

namespace corral::origin {

// One per io thread; fetch() must be called on that thread (the pool's connections are not
// thread-safe). The upstream command timeout bounds every fetch.
class RedisOrigin final : public Origin {
 public:
  // `upstream` (this io thread's) must outlive the origin.
  // Fetches read the upstream's own database (Upstream::database()).
  RedisOrigin(upstream::Upstream& upstream, const cache::Clock& clock)
      : upstream_(upstream), clock_(clock) {}

  std::string_view name() const override { return "redis"; }
  void fetch(std::span<const std::string_view> argv, FetchCallback done) override;

 private:
  upstream::Upstream& upstream_;
  const cache::Clock& clock_;
  std::string command_;  // reused encoding buffer: the connection copies it when queueing
};

}  // namespace corral::origin
