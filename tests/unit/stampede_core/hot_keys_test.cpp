// Tests of hot-key detection: Space-Saving against exact counts on a known Zipf stream, its
// bounds, the merge of per-thread sketches, sampling, and the memory bound (measured by malloc).
#include <catch2/catch.hpp>

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "stampede/core/hot_keys.hpp"
#include "stampede/core/space_saving.hpp"

using namespace corral::stampede;
using namespace std::chrono_literals;

namespace {
// A fixed Zipf(1.1) stream over `keys` keys, the same on every run.
std::vector<std::string> zipf_stream(std::size_t length, std::size_t keys, unsigned seed) {
  std::vector<double> weights(keys);
  for (std::size_t i = 0; i < keys; ++i) weights[i] = 1.0 / std::pow(double(i + 1), 1.1);
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());
  std::mt19937_64 random(seed);
  std::vector<std::string> out;
  out.reserve(length);
  for (std::size_t i = 0; i < length; ++i) out.push_back("key:" + std::to_string(pick(random)));
  return out;
}

std::map<std::string, std::uint64_t> exact_counts(const std::vector<std::string>& stream) {
  std::map<std::string, std::uint64_t> counts;
  for (const auto& key : stream) ++counts[key];
  return counts;
}

std::vector<std::pair<std::uint64_t, std::string>> exact_top(
    const std::map<std::string, std::uint64_t>& counts, std::size_t n) {
  std::vector<std::pair<std::uint64_t, std::string>> all;
  for (const auto& [key, count] : counts) all.emplace_back(count, key);
  std::sort(all.rbegin(), all.rend());
  all.resize(std::min(n, all.size()));
  return all;
}
}  // namespace

TEST_CASE("Space-Saving holds the exact top keys of a Zipf stream within its error", "[hotkeys]") {
  const auto stream = zipf_stream(200'000, 100'000, 7);
  const auto counts = exact_counts(stream);
  SpaceSaving sketch(256, 64);
  for (const auto& key : stream) sketch.add(key);
  REQUIRE(sketch.counters().size() == 256);
  for (const auto& counter : sketch.counters()) {
    const auto truth = counts.at(counter.key);
    // The guarantee: true count in [count - error, count].
    CHECK(counter.count >= truth);
    CHECK(counter.count - counter.error <= truth);
  }
  // Every key above N / capacity is held; the true top 20 are far above it.
  for (const auto& [truth, key] : exact_top(counts, 20)) {
    REQUIRE(truth > stream.size() / 256);
    CHECK(sketch.holds(key));
  }
}

TEST_CASE("merged thread sketches keep the guarantee over the whole stream", "[hotkeys]") {
  const auto stream = zipf_stream(100'000, 100'000, 11);
  const auto counts = exact_counts(stream);
  SpaceSaving a(128, 64);
  SpaceSaving b(128, 64);
  for (std::size_t i = 0; i < stream.size(); ++i) (i % 3 == 0 ? a : b).add(stream[i]);
  const auto merged = merge_sketches({&a, &b}, 128);
  REQUIRE(merged.size() == 128);
  for (const auto& counter : merged) {
    const auto truth = counts.at(counter.key);
    CHECK(counter.count >= truth);
    CHECK(counter.count - counter.error <= truth);
  }
  const auto top = exact_top(counts, 10);
  for (std::size_t i = 0; i < top.size(); ++i) {
    const auto found = std::find_if(merged.begin(), merged.end(),
                                    [&](const auto& c) { return c.key == top[i].second; });
    REQUIRE(found != merged.end());
  }
}

TEST_CASE("sampled detection estimates the top rates within its stated error", "[hotkeys]") {
  const auto stream = zipf_stream(400'000, 100'000, 3);
  const auto counts = exact_counts(stream);
  HotKeys keys(2, HotKeyOptions{256, 64, 16});
  HotKeySampler first(keys, 0, 1);
  HotKeySampler second(keys, 1, 2);
  for (std::size_t i = 0; i < stream.size(); ++i) {
    auto& sampler = i % 2 ? second : first;
    if (sampler.due()) sampler.count(HotKeyKind::read, stream[i]);
  }
  keys.roll(10s);  // the stream "took" 10 s: rate = count / 10
  const auto hot = keys.top(5, HotKeyKind::read);
  const auto truth = exact_top(counts, 5);
  REQUIRE(hot.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    const double true_rate = double(counts.at(hot[i].key)) / 10.0;
    CHECK(std::abs(hot[i].rate - true_rate) <= hot[i].rate_error);
    // The hottest keys come out in the true order's neighbourhood: each is a true top-10 key.
    const auto top10 = exact_top(counts, 10);
    CHECK(std::any_of(top10.begin(), top10.end(),
                      [&](const auto& t) { return t.second == hot[i].key; }));
  }
  CHECK(hot[0].key == truth[0].second);
  const double sampled = double(keys.sampled_total(HotKeyKind::read));
  CHECK(sampled > stream.size() / 16.0 * 0.9);
  CHECK(sampled < stream.size() / 16.0 * 1.1);
  CHECK(keys.top(5, HotKeyKind::write).empty());
}

TEST_CASE("a window's counts leave with the next roll", "[hotkeys]") {
  HotKeys keys(1, HotKeyOptions{8, 64, 1});
  for (int i = 0; i < 10; ++i) keys.count(0, HotKeyKind::write, "w");
  keys.roll(1s);
  REQUIRE(keys.top(10, std::nullopt).size() == 1);
  CHECK(keys.top(10, std::nullopt)[0].rate == 10.0);
  CHECK(keys.top(10, std::nullopt)[0].kind == HotKeyKind::write);
  keys.roll(1s);
  CHECK(keys.top(10, std::nullopt).empty());
}

TEST_CASE("keys over max_key_bytes are not tracked", "[hotkeys]") {
  SpaceSaving sketch(4, 8);
  sketch.add("short");
  sketch.add("far-too-long-a-key");
  CHECK(sketch.counters().size() == 1);
  CHECK(sketch.untracked() == 1);
}

TEST_CASE("the sketch stays within its memory bound whatever the stream", "[hotkeys]") {
  constexpr std::size_t kCapacity = 1024;
  constexpr std::size_t kMaxKey = 128;
  // The stated bound: per counter the key's bytes and the fixed overhead (the Counter, its heap
  // and position slots, a hash node and bucket, malloc's headers).
  constexpr std::size_t kPerCounter = kMaxKey + SpaceSaving::kOverheadPerCounter;
  const auto before = mallinfo2().uordblks;
  {
    SpaceSaving sketch(kCapacity, kMaxKey);
    std::mt19937_64 random(5);
    for (int i = 0; i < 300'000; ++i) {
      // Distinct keys of every length up to the limit, and some over it.
      sketch.add(std::string(random() % (kMaxKey + 16), 'x') + std::to_string(random()));
    }
    const auto used = mallinfo2().uordblks - before;
    INFO("bytes in use by the sketch: " << used);
    CHECK(used <= kCapacity * kPerCounter);
    CHECK(sketch.counters().size() == kCapacity);
  }
}
