// The cached-read path of one io thread as the proxy sees it (Engine, engine.hpp, does the work):
// serves policy reads from the store and protects the origin (coalescing, grace, XFetch,
// stale-if-error, backoff, breaker, negative caching).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "stampede/hot/hot_fill_routes.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {
class Link;
class Upstream;
}  // namespace corral::upstream
namespace corral::origin {
class Origin;
}

namespace corral::stampede {

struct PolicyRef;

// Builds the origin of one policy on one io thread (http, fleet and versioned layers); returns
// `redis` itself for a plain `origin: redis` policy.
using OriginFactory = std::function<std::shared_ptr<origin::Origin>(
    const PolicyRef& policy, const std::shared_ptr<origin::Origin>& redis)>;

struct ReadThroughOptions {
  std::shared_ptr<origin::Origin> redis_origin;  // serves the policies with `origin: redis`
  cache::Random* random = nullptr;               // jitter, XFetch, backoff; null: thread_random()
  bool sweeper = true;  // this thread may run the store's sweeper (one thread per process does)
  OriginFactory make_origin;  // null: every policy reads through `redis_origin` (tests)
  // Where hot-key fills are read (hot_keys.cache); empty: no hot caching here.
  HotFillRoutes hot_routes;
};

class ReadThrough {
 public:
  // Production: policies with `origin: redis` read through `upstream` (the configured database),
  // as do fleet policies' scripts. Must be destroyed on (or after stopping) the executor's thread.
  ReadThrough(const boost::asio::any_io_executor& executor, CacheRuntime& runtime,
              upstream::Upstream& upstream);
  // With origins of the caller's choice (tests drive fetches by hand through this seam).
  ReadThrough(const boost::asio::any_io_executor& executor, CacheRuntime& runtime,
              ReadThroughOptions options);
  ~ReadThrough();
  ReadThrough(const ReadThrough&) = delete;
  ReadThrough& operator=(const ReadThrough&) = delete;

  // `command` is the command table's row name ("get", "mget", "hget" ...). Returns true when
  // the request is a cached read of a policy key: its reply will reach target->on_*(tag),
  // exactly once, on this thread. False: the caller forwards it as usual.
  bool handle_read(std::string_view command, std::span<const std::string_view> argv,
                   std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target);

  // For a write touching `argv[key_indices]`: the target to forward it with, so cached entries
  // of those keys are dropped once Redis has answered (reply or not). Returns `target` itself
  // when none of the keys falls under a policy.
  std::shared_ptr<upstream::ReplyTarget> wrap_write(
      std::span<const std::string_view> argv, std::span<const std::size_t> key_indices,
      const std::shared_ptr<upstream::ReplyTarget>& target);

  // The error for a write (other than DEL / UNLINK) to a key whose policy has `writes: refuse`
  // (http origins by default: the origin is the source of truth), or nullopt.
  std::optional<std::string> refused_write(std::span<const std::string_view> argv,
                                           std::span<const std::size_t> key_indices);

  // FLUSHDB / FLUSHALL went through: everything cached goes.
  void flush_all();

  // For policies with on_invalidate: refresh, fetches an invalidated key again in the background.
  void refresh_invalidated(std::string_view key);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace corral::stampede
