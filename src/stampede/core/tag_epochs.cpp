// TagEpochs: a generation counter and the generation of each tag's last purge.
#include "stampede/core/tag_epochs.hpp"

namespace corral::stampede {

std::string tag_key(std::string_view tag) {
  std::string key(kTagKeyPrefix);
  key += '{';
  key += tag;
  key += '}';
  return key;
}

std::optional<std::string_view> tag_of_key(std::string_view key) {
  if (!key.starts_with(kTagKeyPrefix)) return std::nullopt;
  key.remove_prefix(kTagKeyPrefix.size());
  if (key.size() < 2 || key.front() != '{' || key.back() != '}') return std::nullopt;
  return key.substr(1, key.size() - 2);
}

std::uint64_t TagEpochs::purge_all() {
  std::unique_lock lock(mutex_);
  all_purged_at_ = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
  counts_.clear();
  return all_purged_at_;
}

std::uint64_t TagEpochs::purge(std::string_view tag) {
  std::unique_lock lock(mutex_);
  // Bumped under the lock with the tag's record, so a reader that sees the new generation and
  // then takes the lock finds the tag recorded.
  const auto generation = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
  const auto found = purged_at_.find(tag);
  if (found == purged_at_.end()) {
    purged_at_.emplace(std::string(tag), generation);
  } else {
    found->second = generation;
  }
  if (const auto count = counts_.find(tag); count != counts_.end()) counts_.erase(count);
  return generation;
}

std::optional<std::uint64_t> TagEpochs::known_count(std::string_view tag) const {
  std::shared_lock lock(mutex_);
  const auto found = counts_.find(tag);
  if (found == counts_.end()) return std::nullopt;
  return found->second;
}

void TagEpochs::remember_count(std::string_view tag, std::uint64_t count, std::uint64_t since) {
  std::unique_lock lock(mutex_);
  if (all_purged_at_ > since) return;
  const auto purged = purged_at_.find(tag);
  if (purged != purged_at_.end() && purged->second > since) return;
  counts_.insert_or_assign(std::string(tag), count);
}

bool TagEpochs::purged_after(std::span<const std::string> tags, std::uint64_t since) const {
  if (tags.empty() || generation() <= since) return false;
  std::shared_lock lock(mutex_);
  if (all_purged_at_ > since) return true;
  for (const auto& tag : tags) {
    const auto found = purged_at_.find(tag);
    if (found != purged_at_.end() && found->second > since) return true;
  }
  return false;
}

}  // namespace corral::stampede
