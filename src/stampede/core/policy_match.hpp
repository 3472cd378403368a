// Finds the policy of a key: the configured prefix that is the longest prefix of the key.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/settings.hpp"

namespace corral::stampede {

// Built once per Settings and immutable afterwards, so any thread may call match() without a
// lock. A key is probed once per distinct prefix length (longest first) with one hash lookup;
// configs have a handful of lengths. A bitmap of prefixes' first bytes rejects most
// non-matching keys before any hashing.
class PolicyMatcher {
 public:
  PolicyMatcher() = default;
  explicit PolicyMatcher(std::span<const config::PolicySettings> policies);
  explicit PolicyMatcher(std::span<const std::string> prefixes);

  // Index of the policy whose prefix is the longest prefix of `key`; nullopt when none is. When
  // two policies share a prefix the first one wins (config validation rejects that anyway).
  std::optional<std::size_t> match(std::string_view key) const;

 private:
  // Transparent, so match() looks up string_views without building strings.
  struct PrefixHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };
  void add(std::string_view prefix, std::size_t index);
  void finish();

  std::unordered_map<std::string, std::size_t, PrefixHash, std::equal_to<>> by_prefix_;
  std::vector<std::size_t> lengths_;            // distinct non-zero prefix lengths, longest first
  std::optional<std::size_t> empty_prefix_;     // a "" prefix matches every key
  std::array<std::uint64_t, 4> first_bytes_{};  // bit b set: some non-empty prefix starts with b
};

}  // namespace corral::stampede
