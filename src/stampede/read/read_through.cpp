// ReadThrough: the public face of the per-thread Engine, built with the production origins.
#include "stampede/read/read_through.hpp"

#include "origin/redis_origin.hpp"
#include "resp/ascii.hpp"
#include "resp/encoder.hpp"
#include "stampede/engine.hpp"
#include "stampede/policy/policy_origins.hpp"
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

// A hot key's read as the upstream places it: GET, its one key first.
class GetShape final : public upstream::CommandShape {
 public:
  std::string_view name() const override { return "get"; }
  bool read_only() const override { return true; }
  std::size_t key_step() const override { return 1; }
  void find_keys(std::span<const std::string_view>, std::vector<std::size_t>& out) const override {
    out.assign(1, 1);
  }
};
const GetShape kGetShape;

// Hot-key fills need a connection of their own per server: its CLIENT TRACKING (default mode,
// redirected) cannot share a connection with other clients' commands or with the BCAST tracking
// link, and a cluster node tracks only the keys read on it.
HotFillRoutes hot_routes(CacheRuntime& runtime, upstream::Upstream& upstream) {
  if (runtime.hot() == nullptr) return {};
  return {[&upstream](std::string_view key) { return upstream.server_of_key(key); },
          [&upstream](std::string_view key) {
            const std::string_view argv[] = {"GET", key};
            return upstream.partition_of({kGetShape, argv, {}});
          },
          [&upstream](const std::string& server) {
            return upstream.open_own_link_to(server, upstream.database(), 2);
          },
          [&upstream](std::string_view key, std::shared_ptr<upstream::ReplyTarget> target) {
            const std::string_view argv[] = {"GET", key};
            std::string bytes;
            resp::append_command(bytes, argv);
            upstream.fetch(argv, bytes, upstream.database(), target);
          },
          [&upstream] { return upstream.generation(); }};
}

// A fill may read a replica when every key it reads is cached under a policy with read_from:
// prefer_replica (MGET's keys may fall under several policies).
origin::RedisOrigin::ReplicaFills replica_fills(CacheRuntime& runtime) {
  return [&runtime](std::span<const std::string_view> argv) {
    if (argv.size() < 2) return false;
    const auto policies = runtime.policies();
    const std::size_t last = resp::iequals(argv[0], "mget") ? argv.size() : 2;
    for (std::size_t i = 1; i < last; ++i) {
      const auto* policy = policies->find(argv[i]);
      if (policy == nullptr || policy->read_from != config::ReadFrom::prefer_replica) return false;
    }
    return true;
  };
}
}  // namespace

ReadThrough::ReadThrough(const boost::asio::any_io_executor& executor, CacheRuntime& runtime,
                         upstream::Upstream& upstream)
    : ReadThrough(
          executor, runtime,
          ReadThroughOptions{
              std::make_shared<origin::RedisOrigin>(
                  upstream, runtime.clock(), replica_fills(runtime), &runtime.invalidation_mark()),
              nullptr, true,
              policy_origins(executor, upstream.keyed_caller({kFleetFailoverRetries}), runtime),
              hot_routes(runtime, upstream)}) {}

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
