// /metrics families of hot-key detection, of bounded cardinality whatever the keys: sampled
// requests by kind, and the rates of the top kHotKeyRanks keys by rank (no key label).
#pragma once

#include <cstddef>
#include <memory>

namespace prometheus {
class Collectable;
}

namespace corral::stampede {

class HotKeys;

inline constexpr std::size_t kHotKeyRanks = 5;

// `keys` must outlive the collector.
std::shared_ptr<prometheus::Collectable> make_hot_keys_collector(const HotKeys& keys);

}  // namespace corral::stampede
