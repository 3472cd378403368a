// The `redis` origin: one upstream command per fetch, its reply classified for the cache.
#include "origin/redis_origin.hpp"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

#include "resp/encoder.hpp"
#include "upstream/cluster/cluster_split.hpp"
#include "upstream/errors.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/single/pool.hpp"
#include "upstream/reply_target.hpp"

namespace corral::origin {

namespace {

// 100 ms apart: 8 s, longer than a failover with the usual cluster-node-timeout of a few seconds.
constexpr int kFailoverRetries = 80;

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

RedisOrigin::RedisOrigin(const boost::asio::any_io_executor& executor, upstream::Pool& pool,
                         int database, const cache::Clock& clock)
    : executor_(executor), pool_(pool), database_(database), clock_(clock) {}

void RedisOrigin::fetch(std::span<const std::string_view> argv, FetchCallback done) {
  command_.clear();
  resp::append_command(command_, argv);
  auto target = std::make_shared<FetchTarget>(std::move(done), clock_);
  if (cluster_ != nullptr) return fetch_on_cluster(argv, target);
  if (pool_.shared(database_).send(command_, target, 0)) return;
  // The contract forbids calling back from within fetch(): the caller may still be setting up.
  boost::asio::post(executor_, [target] { target->on_failure(0, upstream::kErrUnavailable); });
}

// The cached commands are GET-like (the key first) or MGET; a cluster command may answer at once
// (no node for the slot), so it starts from the event loop, as the fetch contract requires.
void RedisOrigin::fetch_on_cluster(std::span<const std::string_view> argv,
                                   const std::shared_ptr<upstream::ReplyTarget>& target) {
  upstream::ClusterCommandOptions options;
  options.read_only = true;
  options.max_redirects = max_redirects_;
  // A fetch waits out a failover (its clients are served stale meanwhile, when grace allows).
  options.unreachable_retries = kFailoverRetries;
  options.clusterdown_retries = kFailoverRetries;
  const bool mget = argv.size() > 2 && argv[0].size() == 4 &&
                    std::equal(argv[0].begin(), argv[0].end(), "mget", [](char a, char b) {
                      return std::tolower(static_cast<unsigned char>(a)) == b;
                    });
  if (mget) {
    std::vector<std::string> words(argv.begin(), argv.end());
    boost::asio::post(executor_, [this, target, words = std::move(words), options] {
      std::vector<std::string_view> view(words.begin(), words.end());
      std::vector<std::size_t> keys(view.size() - 1);
      for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = i + 1;
      upstream::send_split_by_slot(*cluster_, view, keys, 1,
                                   upstream::ClusterMerge::values_in_key_order, options, target, 0);
    });
    return;
  }
  options.slot = argv.size() > 1 ? upstream::key_slot(argv[1]) : 0;
  auto command =
      std::make_shared<upstream::ClusterCommand>(*cluster_, command_, options, target, 0);
  boost::asio::post(executor_, [command] { command->start(); });
}

}  // namespace corral::origin
