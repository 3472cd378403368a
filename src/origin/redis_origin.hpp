// The `redis` origin: misses and refreshes are read from the upstream Redis itself, on the io
// thread's shared pipelined connection, so Corral is a near-cache in front of Redis.
#pragma once

#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "cache/clock.hpp"
#include "origin/origin.hpp"

namespace corral::upstream {
class Pool;
class ClusterLinks;
class ReplyTarget;
}  // namespace corral::upstream

namespace corral::origin {

// One per io thread; fetch() must be called on that thread (the pool's connections are not
// thread-safe). The upstream command timeout bounds every fetch.
class RedisOrigin final : public Origin {
 public:
  RedisOrigin(const boost::asio::any_io_executor& executor, upstream::Pool& pool, int database,
              const cache::Clock& clock);
  // On a Redis Cluster: each fetch goes to its key's slot (MGET split by slot), redirects
  // followed; `pool` is not used for fetches then.
  void use_cluster(upstream::ClusterLinks& links, int max_redirects) {
    cluster_ = &links;
    max_redirects_ = max_redirects;
  }

  std::string_view name() const override { return "redis"; }
  void fetch(std::span<const std::string_view> argv, FetchCallback done) override;

 private:
  boost::asio::any_io_executor executor_;
  upstream::Pool& pool_;
  int database_;
  const cache::Clock& clock_;
  std::string command_;  // reused encoding buffer: the connection copies it when queueing
  upstream::ClusterLinks* cluster_ = nullptr;
  int max_redirects_ = 5;

  void fetch_on_cluster(std::span<const std::string_view> argv,
                        const std::shared_ptr<upstream::ReplyTarget>& target);
};

}  // namespace corral::origin
