// Choosing the hot set from a window's report.
#include "stampede/core/hot_set.hpp"

#include <algorithm>

namespace corral::stampede {

double guaranteed_rate(const HotKey& key) {
  if (key.sampled == 0) return 0;
  const auto certain = key.sampled - std::min(key.sketch_error, key.sampled);
  return key.rate * static_cast<double>(certain) / static_cast<double>(key.sampled);
}

std::vector<std::string> choose_hot_keys(const std::vector<HotKey>& report, double min_rate,
                                         std::size_t max_keys,
                                         const std::function<bool(std::string_view)>& excluded) {
  std::vector<const HotKey*> reads;
  for (const auto& key : report) {
    if (key.kind != HotKeyKind::read || guaranteed_rate(key) < min_rate) continue;
    if (excluded && excluded(key.key)) continue;
    reads.push_back(&key);
  }
  std::stable_sort(reads.begin(), reads.end(), [](const HotKey* a, const HotKey* b) {
    return guaranteed_rate(*a) > guaranteed_rate(*b);
  });
  if (reads.size() > max_keys) reads.resize(max_keys);
  std::vector<std::string> keys;
  keys.reserve(reads.size());
  for (const auto* key : reads) keys.push_back(key->key);
  return keys;
}

}  // namespace corral::stampede
