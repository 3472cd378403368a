// Longest-prefix matching of keys to policies (see policy_match.hpp for the approach).
#include "stampede/core/policy_match.hpp"

#include <algorithm>
#include <functional>

namespace corral::stampede {

PolicyMatcher::PolicyMatcher(std::span<const config::PolicySettings> policies) {
  for (std::size_t index = 0; index < policies.size(); ++index) add(policies[index].prefix, index);
  finish();
}

PolicyMatcher::PolicyMatcher(std::span<const std::string> prefixes) {
  for (std::size_t index = 0; index < prefixes.size(); ++index) add(prefixes[index], index);
  finish();
}

void PolicyMatcher::add(std::string_view prefix, std::size_t index) {
  if (prefix.empty()) {
    if (!empty_prefix_) empty_prefix_ = index;
    return;
  }
  if (!by_prefix_.emplace(prefix, index).second) return;  // the first one wins
  const auto first = static_cast<unsigned char>(prefix.front());
  first_bytes_[first / 64] |= std::uint64_t{1} << (first % 64);
  lengths_.push_back(prefix.size());
}

void PolicyMatcher::finish() {
  std::sort(lengths_.begin(), lengths_.end(), std::greater<>());
  lengths_.erase(std::unique(lengths_.begin(), lengths_.end()), lengths_.end());
}
std::optional<std::size_t> PolicyMatcher::match(std::string_view key) const {
  if (!key.empty()) {
    const auto first = static_cast<unsigned char>(key.front());
    if (first_bytes_[first / 64] & (std::uint64_t{1} << (first % 64))) {
      for (const std::size_t length : lengths_) {
        if (length > key.size()) continue;
        const auto found = by_prefix_.find(key.substr(0, length));
        if (found != by_prefix_.end()) return found->second;
      }
    }
  }
  return empty_prefix_;
}

}  // namespace corral::stampede
