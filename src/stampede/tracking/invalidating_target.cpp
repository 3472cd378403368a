// A write's reply target: invalidates its keys, then answers the client.
#include "stampede/tracking/invalidating_target.hpp"

#include <utility>

#include "stampede/engine.hpp"
#include "stampede/hot/hot_cache.hpp"

namespace corral::stampede {

InvalidatingTarget::InvalidatingTarget(std::weak_ptr<Engine> engine, CacheRuntime& runtime,
                                       std::shared_ptr<upstream::ReplyTarget> target,
                                       std::vector<std::string> keys)
    : engine_(std::move(engine)),
      runtime_(runtime),
      target_(std::move(target)),
      keys_(std::move(keys)) {}

InvalidatingTarget::~InvalidatingTarget() {
  if (done_) return;
  if (const auto engine = engine_.lock()) {
    for (const auto& key : keys_) engine->write_done(key);
  }
}

void InvalidatingTarget::on_reply(std::uint64_t tag, std::string_view reply) {
  done();
  target_->on_reply(tag, reply);
}

void InvalidatingTarget::on_failure(std::uint64_t tag, std::string_view error) {
  // The write may have run even so: invalidate as for a reply.
  done();
  target_->on_failure(tag, error);
}

void InvalidatingTarget::done() {
  if (done_) return;
  done_ = true;
  // Before the client sees its write acknowledged: no later read may find the old value, and
  // fills of fetches that raced the write are superseded.
  for (const auto& key : keys_) {
    runtime_.store().invalidate(key);
    if (auto* hot = runtime_.hot()) hot->invalidate(key);
  }
  if (const auto engine = engine_.lock()) {
    for (const auto& key : keys_) {
      engine->write_done(key);
      engine->refresh_invalidated(key);
    }
  }
}

}  // namespace corral::stampede
