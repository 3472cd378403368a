// The keys cached as hot (hot_keys.cache): chosen once per detection window from its report, and
// swapped whole, so a read asks one immutable set whether its key is hot.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "stampede/core/hot_keys.hpp"

namespace corral::stampede {

class HotSet {
 public:
  HotSet() = default;
  explicit HotSet(std::vector<std::string> keys) : keys_(keys.begin(), keys.end()) {}

  bool contains(std::string_view key) const { return keys_.find(key) != keys_.end(); }
  std::size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (const auto& key : keys_) visit(std::string_view(key));
  }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  std::unordered_set<std::string, Hash, std::equal_to<>> keys_;
};

// The read rate a report entry is known to reach: its estimate less the sketch's over-count (a
// key that inherited a large count from an evicted one is not hot for that alone).
double guaranteed_rate(const HotKey& key);

// The read keys of `report` whose guaranteed rate is at least `min_rate` and that `excluded`
// does not reject (keys under a policy, cached by it already), hottest first, at most `max_keys`.
std::vector<std::string> choose_hot_keys(const std::vector<HotKey>& report, double min_rate,
                                         std::size_t max_keys,
                                         const std::function<bool(std::string_view)>& excluded);

}  // namespace corral::stampede
