// The `redis` origin: one upstream command per fetch, its reply classified for the cache.
#include "origin/redis_origin.hpp"

#include <utility>

#include "resp/encoder.hpp"
#include "upstream/invalidation_mark.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/upstream.hpp"

namespace corral::origin {

namespace {

// The connection holds this until it delivers the reply: the fetch is owned by the upstream
// FIFO, not by whoever asked for it.
class FetchTarget final : public upstream::ReplyTarget {
 public:
  FetchTarget(FetchCallback done, const cache::Clock& clock)
      : done_(std::move(done)), clock_(clock), started_(clock.now()) {}

  void on_reply(std::uint64_t, std::string_view reply) override {
    finish({classify_reply(reply), reply, clock_.now() - started_});
  }
  void on_failure(std::uint64_t, std::string_view error) override {
    finish({Outcome::failure, error, clock_.now() - started_});
  }

 private:
  void finish(const FetchResult& result) {
    // Moved out first: the callback may start another fetch that reuses nothing of ours.
    auto done = std::move(done_);
    if (done) done(result);
  }

  FetchCallback done_;
  const cache::Clock& clock_;
  cache::TimePoint started_;
};

}  // namespace

void RedisOrigin::fetch(std::span<const std::string_view> argv, FetchCallback done) {
  command_.clear();
  resp::append_command(command_, argv);
  auto target = std::make_shared<FetchTarget>(std::move(done), clock_);
  if (replica_fills_ && mark_ != nullptr && replica_fills_(argv)) {
    return upstream_.fetch_from_replica(argv, command_, upstream_.database(), mark_->last(),
                                        target);
  }
  upstream_.fetch(argv, command_, upstream_.database(), target);
}

}  // namespace corral::origin
