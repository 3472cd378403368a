// The `redis` origin: misses and refreshes are read from the upstream Redis itself (the io
// thread's Upstream: its shared pipelined connection, or a cluster slot's node), so Corral is a
// near-cache in front of Redis.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "cache/clock.hpp"
#include "origin/origin.hpp"

namespace corral::upstream {
class InvalidationMark;
class Upstream;
}  // namespace corral::upstream

namespace corral::origin {

// One per io thread; fetch() must be called on that thread (the pool's connections are not
// thread-safe). The upstream command timeout bounds every fetch.
class RedisOrigin final : public Origin {
 public:
  // Whether a fill of `argv` may read a replica: its keys' policies say read_from:
  // prefer_replica.
  using ReplicaFills = std::function<bool(std::span<const std::string_view> argv)>;

  // `upstream` (this io thread's) must outlive the origin; so must `mark` (the tracking link's,
  // which fills from replicas must have seen), needed with `replica_fills`. Fetches read the
  // upstream's own database (Upstream::database()).
  RedisOrigin(upstream::Upstream& upstream, const cache::Clock& clock,
              ReplicaFills replica_fills = {}, const upstream::InvalidationMark* mark = nullptr)
      : upstream_(upstream), clock_(clock), replica_fills_(std::move(replica_fills)), mark_(mark) {}

  std::string_view name() const override { return "redis"; }
  void fetch(std::span<const std::string_view> argv, FetchCallback done) override;

 private:
  upstream::Upstream& upstream_;
  const cache::Clock& clock_;
  ReplicaFills replica_fills_;
  const upstream::InvalidationMark* mark_;
  std::string command_;  // reused encoding buffer: the connection copies it when queueing
};

}  // namespace corral::origin
