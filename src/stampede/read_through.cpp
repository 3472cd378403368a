// ReadThrough: the public face of the per-thread Engine, built with the production origins.
#include "stampede/read_through.hpp"

#include "origin/redis_origin.hpp"
#include "stampede/engine.hpp"
#include "stampede/policy_origins.hpp"
#include "upstream/upstream.hpp"

namespace corral::stampede {

struct ReadThrough::Impl {
  std::shared_ptr<Engine> engine;
};

namespace {

// A fleet's calls wait out a failover (about 8 s) like a redis-origin fetch. Its scripts may run
// twice after a lost connection: reads, a fenced write and a compare-and-delete are unharmed, and
// a lock the lost first try took only makes this fetch wait for it to expire.
constexpr int kFleetFailoverRetries = 80;

// Hot-key fills need a connection of their own: its CLIENT TRACKING (default mode, redirected)
// cannot share a connection with other clients' commands or with the BCAST tracking link.
std::function<std::shared_ptr<upstream::Link>()> hot_connect(CacheRuntime& runtime,
                                                             upstream::Upstream& upstream) {
  if (runtime.hot() == nullptr) return {};
  return [&upstream, database = runtime.database()] { return upstream.open_own_link(database, 2); };
}
}  // namespace

ReadThrough::ReadThrough(const boost::asio::any_io_executor& executor, CacheRuntime& runtime,
                         upstream::Upstream& upstream)
    : ReadThrough(
          executor, runtime,
          ReadThroughOptions{
              std::make_shared<origin::RedisOrigin>(upstream, runtime.database(), runtime.clock()),
              nullptr, true,
              policy_origins(executor,
                             upstream.keyed_caller({runtime.database(), kFleetFailoverRetries}),
                             runtime),
              hot_connect(runtime, upstream)}) {}

ReadThrough::ReadThrough(const boost::asio::any_io_executor& executor, CacheRuntime& runtime,
                         ReadThroughOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->engine = std::make_shared<Engine>(executor, runtime, std::move(options));
  impl_->engine->start();
}

ReadThrough::~ReadThrough() { impl_->engine->stop(); }

bool ReadThrough::handle_read(std::string_view command, std::span<const std::string_view> argv,
                              std::uint64_t tag,
                              const std::shared_ptr<upstream::ReplyTarget>& target) {
  return impl_->engine->handle_read(command, argv, tag, target);
}

std::shared_ptr<upstream::ReplyTarget> ReadThrough::wrap_write(
    std::span<const std::string_view> argv, std::span<const std::size_t> key_indices,
    const std::shared_ptr<upstream::ReplyTarget>& target) {
  return impl_->engine->wrap_write(argv, key_indices, target);
}

void ReadThrough::flush_all() { impl_->engine->flush_all(); }

std::optional<std::string> ReadThrough::refused_write(std::span<const std::string_view> argv,
                                                      std::span<const std::size_t> key_indices) {
  return impl_->engine->refused_write(argv, key_indices);
}

void ReadThrough::refresh_invalidated(std::string_view key) {
  impl_->engine->refresh_invalidated(key);
}

}  // namespace corral::stampede
