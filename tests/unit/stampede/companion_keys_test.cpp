// Corral's fleet bookkeeping in Redis (shared copies, locks, tag purge counters) is refused to
// clients' writes, whatever the policy's `writes` setting.
#include "stampede/fleet/companion_keys.hpp"
#include "engine_support.hpp"
#include "upstream/cluster/hash_tag.hpp"

using namespace corral;
using namespace corral::test;

TEST_CASE("companion_owner inverts companion_key for the fleet's suffixes", "[fleet]") {
  using stampede::companion_owner;
  for (std::string_view key : {"feat:U1", "feat:{U1}", "{x}y"}) {
    INFO(key);
    CHECK(companion_owner(upstream::companion_key(key, stampede::kShadowSuffix)) == key);
    CHECK(companion_owner(upstream::companion_key(key, stampede::kLockSuffix)) == key);
  }
  CHECK_FALSE(companion_owner("feat:U1"));
  CHECK_FALSE(companion_owner("corral:shadow"));
  CHECK_FALSE(companion_owner("feat:U1corral:shadow"));
  CHECK_FALSE(companion_owner("feat:U1:corral:other"));
}

TEST_CASE("writes to a fleet policy's shared copy, lock or tag counters are refused", "[fleet]") {
  auto shared = policy("feat:");
  shared.shared = true;
  shared.writes = config::WritePolicy::passthrough;
  auto local = policy("p:");
  local.writes = config::WritePolicy::passthrough;
  Fixture f({shared, local});
  const auto refusal = [&f](std::string_view key) {
    const std::string_view argv[] = {"HSET", key, "v", "EVIL"};
    const std::size_t keys[] = {1};
    return f.node->read_through.refused_write(argv, keys);
  };
  for (std::string_view key :
       {"{feat:U1}:corral:shadow", "{feat:U1}:corral:lock", "feat:{U1}:corral:shadow"}) {
    INFO(key);
    const auto refused = refusal(key);
    REQUIRE(refused);
    CHECK(refused->find("fleet bookkeeping of policy 'feat:'") != std::string::npos);
  }
  const auto tag = refusal("corral:tag:news");
  REQUIRE(tag);
  CHECK(tag->find("tag purge counter") != std::string::npos);
  // A policy without fleet mode has no such keys; others pass as before.
  CHECK_FALSE(refusal("{p:1}:corral:shadow"));
  CHECK_FALSE(refusal("feat:U1"));
  CHECK_FALSE(refusal("other"));
}
