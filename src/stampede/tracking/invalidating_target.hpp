// The reply target a write to policy keys is forwarded with: drops the cached entries of its keys
// once Redis has answered (reply or not), before the client sees the answer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stampede/policy/cache_runtime.hpp"
#include "upstream/reply_target.hpp"

namespace corral::stampede {

class Engine;

// Forwards a write's outcome to the client after dropping the cached entries of its keys.
class InvalidatingTarget final : public upstream::ReplyTarget {
 public:
  InvalidatingTarget(std::weak_ptr<Engine> engine, CacheRuntime& runtime,
                     std::shared_ptr<upstream::ReplyTarget> target, std::vector<std::string> keys);
  ~InvalidatingTarget() override;

  void on_reply(std::uint64_t tag, std::string_view reply) override;
  void on_failure(std::uint64_t tag, std::string_view error) override;

 private:
  void done();

  std::weak_ptr<Engine> engine_;
  CacheRuntime& runtime_;
  std::shared_ptr<upstream::ReplyTarget> target_;
  std::vector<std::string> keys_;
  bool done_ = false;
};

}  // namespace corral::stampede
