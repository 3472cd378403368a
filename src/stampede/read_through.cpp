// ReadThrough: the public face of the per-thread Engine, built with the production origins.
#include "stampede/read_through.hpp"

#include "origin/redis_origin.hpp"
#include "stampede/engine.hpp"
#include "stampede/policy_origins.hpp"

namespace corral::stampede {

struct ReadThrough::Impl {
  std::shared_ptr<Engine> engine;
};

namespace {
std::shared_ptr<origin::RedisOrigin> redis_origin(const boost::asio::any_io_executor& executor,
                                                  CacheRuntime& runtime, upstream::Pool& pool,
                                                  upstream::ClusterLinks* cluster,
                                                  int max_redirects) {
  auto origin =
      std::make_shared<origin::RedisOrigin>(executor, pool, runtime.database(), runtime.clock());
  if (cluster != nullptr) origin->use_cluster(*cluster, max_redirects);
  return origin;
}
}  // namespace

ReadThrough::ReadThrough(const boost::asio::any_io_executor& executor, CacheRuntime& runtime,
                         upstream::Pool& pool, upstream::ClusterLinks* cluster, int max_redirects)
    : ReadThrough(executor, runtime,
                  ReadThroughOptions{redis_origin(executor, runtime, pool, cluster, max_redirects),
                                     nullptr, true, policy_origins(executor, pool, runtime)}) {}

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
