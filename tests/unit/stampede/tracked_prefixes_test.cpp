// Which prefixes the tracking connection asks Redis to broadcast: Redis refuses the whole command
// when two overlap, so nested policies must not both be sent.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "stampede/policy/cache_runtime.hpp"
#include "stampede/tracking/invalidation_listener.hpp"

using namespace corral;
using stampede::tracked_prefixes;

namespace {
config::PolicySettings redis_policy(std::string prefix) {
  config::PolicySettings p;
  p.prefix = std::move(prefix);
  p.origin = config::OriginKind::redis;
  return p;
}

stampede::PolicySet policies(std::vector<config::PolicySettings> settings) {
  stampede::PolicySet set;
  set.settings = std::move(settings);
  return set;
}

using Prefixes = std::vector<std::string>;
}  // namespace

TEST_CASE("disjoint redis-origin prefixes are all tracked", "[tracked_prefixes]") {
  const auto set = policies({redis_policy("product:"), redis_policy("user:")});
  CHECK(tracked_prefixes(set) == Prefixes{"product:", "user:"});
}

TEST_CASE("a nested policy is covered by the outer prefix, not sent beside it",
          "[tracked_prefixes]") {
  const auto set = policies({redis_policy("ck:r:"), redis_policy("ck:"), redis_policy("user:"),
                             redis_policy("user:session:"), redis_policy("user:session:x:")});
  CHECK(tracked_prefixes(set) == Prefixes{"ck:", "user:"});
}

TEST_CASE("an empty prefix covers every other", "[tracked_prefixes]") {
  const auto set = policies({redis_policy("a:"), redis_policy(""), redis_policy("b:")});
  CHECK(tracked_prefixes(set) == Prefixes{""});
}

TEST_CASE("siblings that merely sort together are both kept", "[tracked_prefixes]") {
  const auto set = policies({redis_policy("ab:"), redis_policy("a:"), redis_policy("a")});
  CHECK(tracked_prefixes(set) == Prefixes{"a"});
  const auto siblings = policies({redis_policy("a:"), redis_policy("a;"), redis_policy("ab")});
  CHECK(tracked_prefixes(siblings) == Prefixes{"a:", "a;", "ab"});
}
