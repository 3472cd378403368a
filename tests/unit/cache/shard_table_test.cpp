// Tests of one shard's hash chains with hand-picked hashes: fingerprinted links find every key
// of a crowded bucket, whether their fingerprints differ or collide, through removals and growth.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "cache/chain_link.hpp"
#include "cache/shard_table.hpp"

using namespace corral::cache;
using namespace corral::cache::detail;
using namespace std::chrono_literals;

namespace {

NodePtr make_node(const std::string& key) {
  const Entry entry = Entry::make("v:" + key, TimePoint(1h), Lifetime{1h, {}, {}}, {}, false);
  return NodePtr(Node::create({key, "GET"}, entry));
}

}  // namespace

TEST_CASE("a chain link keeps its node's address and its hash's fingerprint", "[shard_table]") {
  NodePtr node = make_node("k");
  const auto hash = static_cast<std::size_t>((std::uint64_t{0xbeef} << ChainLink::kShift) | 3);
  const ChainLink link(node.get(), hash);
  CHECK(link.node() == node.get());
  CHECK(ChainLink::fingerprint(hash) == 0xbeef);
  CHECK(link.may_hold(hash));
  CHECK(link.may_hold(hash ^ 0xffff));  // the bucket bits play no part
  CHECK_FALSE(link.may_hold(hash ^ (std::size_t{1} << ChainLink::kShift)));
  CHECK_FALSE(ChainLink());
  CHECK(ChainLink::fits(node.get()));
}

TEST_CASE("keys sharing a bucket are found whether their fingerprints differ or collide",
          "[shard_table]") {
  // The table hashes keys itself when it relinks them, so the keys are searched for: two whose
  // hashes share the bucket bits of a 16-bucket table and the fingerprint, and three more in
  // that bucket with fingerprints of their own.
  std::map<std::pair<std::size_t, std::uintptr_t>, std::vector<std::string>> by_bucket_print;
  std::vector<std::string> colliding;
  for (int i = 0; colliding.empty(); ++i) {
    const std::string key = "k" + std::to_string(i);
    const std::size_t hash = hash_user_key(key);
    auto& group = by_bucket_print[{hash & 15, ChainLink::fingerprint(hash)}];
    group.push_back(key);
    if (group.size() == 2) colliding = group;
  }
  const std::size_t bucket = hash_user_key(colliding[0]) & 15;
  const std::uintptr_t print = ChainLink::fingerprint(hash_user_key(colliding[0]));
  std::vector<std::string> keys = colliding;
  for (const auto& [at, group] : by_bucket_print) {
    if (at.first == bucket && at.second != print && keys.size() < 5) keys.push_back(group[0]);
  }
  REQUIRE(keys.size() == 5);

  StoreCounters counters;
  ShardTable table(1 << 20, counters);
  for (const auto& key : keys) {
    NodePtr node = make_node(key);
    REQUIRE(table.insert(hash_user_key(key), node, TimePoint(1h)));
  }
  for (const auto& key : keys) {
    const Node* found = table.find(hash_user_key(key), {key, "GET"});
    REQUIRE(found != nullptr);
    CHECK(found->user_key() == key);
    CHECK(found->value() == "v:" + key);
  }
  // A key that is not there, probed with a present key's fingerprint (a collision) or another.
  CHECK(table.find(hash_user_key(colliding[0]), {"absent", "GET"}) == nullptr);
  CHECK(table.find(hash_user_key("absent"), {"absent", "GET"}) == nullptr);
  // A present key probed with another fingerprint is passed over: the fingerprint decides.
  const std::size_t other_print = hash_user_key(keys[2]) ^ (std::size_t{1} << ChainLink::kShift);
  CHECK(table.find(other_print, {keys[2], "GET"}) == nullptr);

  // Out of the middle of the chain and off both ends of it (the newest is the chain's head).
  for (const std::size_t index : {2, 0, 4}) {
    CHECK(table.remove_key(hash_user_key(keys[index]), {keys[index], "GET"}));
    CHECK(table.find(hash_user_key(keys[index]), {keys[index], "GET"}) == nullptr);
  }
  for (const std::size_t index : {1, 3}) {
    CHECK(table.find(hash_user_key(keys[index]), {keys[index], "GET"}) != nullptr);
  }
  CHECK(table.entries() == 2);
}

TEST_CASE("growing the bucket array re-fingerprints every node from its own key", "[shard_table]") {
  StoreCounters counters;
  ShardTable table(1 << 24, counters);
  constexpr int kKeys = 5000;  // the table doubles from 16 buckets nine times
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "key:" + std::to_string(i);
    NodePtr node = make_node(key);
    REQUIRE(table.insert(hash_user_key(key), node, TimePoint(1h)));
  }
  int found = 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "key:" + std::to_string(i);
    const Node* node = table.find(hash_user_key(key), {key, "GET"});
    found += node != nullptr && node->value() == "v:" + key;
  }
  CHECK(found == kKeys);
  CHECK(table.remove_user_key(hash_user_key("key:42"), "key:42") == 1);
  CHECK(table.find(hash_user_key("key:42"), {"key:42", "GET"}) == nullptr);
  CHECK(table.remove_all() == kKeys - 1);
}
