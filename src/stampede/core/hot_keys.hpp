// Hot-key detection: a Space-Saving sketch per io thread and kind (reads, writes) fed by sampled
// requests, merged once per window into the report CORRAL.HOTKEYS and /metrics read. Memory is
// fixed by the options: threads * 2 * capacity counters, each key at most max_key_bytes.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stampede/core/space_saving.hpp"

namespace corral::stampede {

enum class HotKeyKind : std::uint8_t { read, write };
inline constexpr std::size_t kHotKeyKinds = 2;

struct HotKeyOptions {
  std::size_t capacity = 256;       // counters per io thread and kind
  std::size_t max_key_bytes = 256;  // longer keys are not tracked
  std::uint32_t sample = 16;        // one request in `sample` (on average) is counted
};

// One key of the last window's report. The rate over-counts by at most the sketch's error and
// has the sampling's own spread besides: rate_error covers both (the sketch error plus two
// standard deviations of the sampled count).
struct HotKey {
  std::string key;
  HotKeyKind kind = HotKeyKind::read;
  double rate = 0;                 // requests per second
  double rate_error = 0;           // +-
  std::uint64_t sampled = 0;       // the merged sketches' count (sampled requests)
  std::uint64_t sketch_error = 0;  // of which at most this much is over-count
};

class HotKeys {
 public:
  HotKeys(std::size_t threads, HotKeyOptions options);
  ~HotKeys();

  // On io thread `thread`: one sampled request on `key`.
  void count(std::size_t thread, HotKeyKind kind, std::string_view key);
  // Closes the window that lasted `elapsed`: the threads' sketches are merged into the report
  // and start again empty.
  void roll(std::chrono::nanoseconds elapsed);
  // The last report's hottest keys, by rate; both kinds when `kind` is unset.
  std::vector<HotKey> top(std::size_t count, std::optional<HotKeyKind> kind) const;
  // Sampled requests since start, by kind (monotonic, for /metrics).
  std::uint64_t sampled_total(HotKeyKind kind) const;
  const HotKeyOptions& options() const { return options_; }
  std::chrono::nanoseconds last_window() const;

 private:
  struct ThreadSketches;

  HotKeyOptions options_;
  std::vector<std::unique_ptr<ThreadSketches>> threads_;
  mutable std::mutex report_mutex_;
  std::vector<HotKey> report_;  // by rate, highest first
  std::chrono::nanoseconds window_{0};
};

// Merges sketches of disjoint parts of one stream (Agarwal et al., "Mergeable summaries", 2012):
// a key absent from a full sketch may have had up to that sketch's floor there, so the floor is
// added to both its count and its error. Keeps the `capacity` largest counts.
std::vector<SpaceSaving::Counter> merge_sketches(const std::vector<const SpaceSaving*>& sketches,
                                                 std::size_t capacity);

// Decides which requests of one io thread are counted: a countdown per request (no clock, no
// random draw), and a fresh gap drawn only when it reaches zero. Gaps are uniform in
// [1, 2 * sample - 1], so a client cycling through `sample` keys is not seen as one hot key.
class HotKeySampler {
 public:
  HotKeySampler(HotKeys& keys, std::size_t thread, std::uint64_t seed)
      : keys_(keys), thread_(thread), state_(seed | 1) {
    countdown_ = next_gap();
  }
  bool due() { return --countdown_ == 0; }
  // After due(): counts the request's key (or nothing, for a keyless one) and starts a new gap.
  void count(HotKeyKind kind, std::string_view key) {
    keys_.count(thread_, kind, key);
    countdown_ = next_gap();
  }
  void skip() { countdown_ = next_gap(); }

 private:
  std::uint32_t next_gap() {
    const std::uint32_t sample = keys_.options().sample;
    if (sample <= 1) return 1;
    state_ ^= state_ << 13;  // xorshift64
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return 1 + static_cast<std::uint32_t>(state_ % (2 * sample - 1));
  }

  HotKeys& keys_;
  std::size_t thread_;
  std::uint64_t state_;
  std::uint32_t countdown_ = 1;
};

}  // namespace corral::stampede
