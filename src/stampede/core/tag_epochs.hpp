// Tag purges without scanning (CORRAL.INVALIDATE TAG): every purge bumps a process-wide
// generation and records it for its tag; an entry fetched at generation G is purged when one of
// its tags was purged after G. Reads of an entry stored since the last purge cost one atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace corral::stampede {

// The Redis key whose INCR announces a purge of `tag` to every process of a fleet (each one
// tracks the prefix): the tag is its hash tag, so on a cluster the key has a slot of its own.
inline constexpr std::string_view kTagKeyPrefix = "corral:tag:";
std::string tag_key(std::string_view tag);
// The tag of such a key, or nullopt for any other key.
std::optional<std::string_view> tag_of_key(std::string_view key);

// Thread-safe. Holds one number per tag ever purged (tags are purged by operators, so few).
class TagEpochs {
 public:
  // Purges `tag`: entries fetched before now that carry it read as purged. Returns the new
  // generation.
  std::uint64_t purge(std::string_view tag);
  // Purges every tag: for when purges may have gone unseen (the tracking connection was down).
  std::uint64_t purge_all();
  // Purges so far: a fetch records it when it begins.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Whether one of `tags` was purged after `since` (a generation()).
  bool purged_after(std::span<const std::string> tags, std::uint64_t since) const;

  // Fleet mode: the value of the tag's key in Redis (how often it was purged) as this process
  // last read it; a purge forgets it, since the purge's INCR changed it.
  std::optional<std::uint64_t> known_count(std::string_view tag) const;
  // Records a count read from Redis, unless the tag was purged after `since` (the read may
  // predate that purge).
  void remember_count(std::string_view tag, std::uint64_t count, std::uint64_t since);

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::atomic<std::uint64_t> generation_{0};
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::uint64_t, Hash, std::equal_to<>> purged_at_;
  std::uint64_t all_purged_at_ = 0;
  std::unordered_map<std::string, std::uint64_t, Hash, std::equal_to<>> counts_;
};

}  // namespace corral::stampede
