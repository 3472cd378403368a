// /metrics families of hot-key detection and caching, of bounded cardinality whatever the keys:
// sampled requests by kind, the rates of the top kHotKeyRanks keys by rank (no key label), and
// the hot-key cache's totals.
#pragma once

#include <cstddef>
#include <memory>

namespace prometheus {
class Collectable;
}

namespace corral::stampede {

class HotCache;
class HotKeys;

inline constexpr std::size_t kHotKeyRanks = 5;

// `keys` and `cache` (null when hot_keys.cache is off) must outlive the collector.
std::shared_ptr<prometheus::Collectable> make_hot_keys_collector(const HotKeys& keys,
                                                                 const HotCache* cache);

}  // namespace corral::stampede
