// EntryMeta as text: "<generation> <stale_if_error_ms> <validators bytes>\n<validators>" then
// one "<tag>\n" per tag (tags never hold a line feed: they come from header fields).
#include "stampede/core/entry_meta.hpp"

#include <algorithm>
#include <charconv>

namespace corral::stampede {

namespace {

// Reads a decimal number ending at `stop`; advances `at` past the stop character.
std::optional<std::uint64_t> read_number(std::string_view bytes, std::size_t& at, char stop) {
  const auto end = bytes.find(stop, at);
  if (end == std::string_view::npos || end == at) return std::nullopt;
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(bytes.data() + at, bytes.data() + end, value);
  if (ec != std::errc() || ptr != bytes.data() + end) return std::nullopt;
  at = end + 1;
  return value;
}

}  // namespace

std::string EntryMeta::encode() const {
  std::string out = std::to_string(tag_generation);
  out += ' ';
  out += std::to_string(stale_if_error.count());
  out += ' ';
  out += std::to_string(validators.size());
  out += '\n';
  out += validators;
  for (const auto& tag : tags) {
    out += tag;
    out += '\n';
  }
  return out;
}

std::optional<std::uint64_t> EntryMeta::generation_of(std::string_view bytes) {
  std::size_t at = 0;
  return read_number(bytes, at, ' ');
}

std::optional<EntryMeta> EntryMeta::decode(std::string_view bytes) {
  std::size_t at = 0;
  const auto generation = read_number(bytes, at, ' ');
  const auto stale_ms = read_number(bytes, at, ' ');
  const auto validators_size = read_number(bytes, at, '\n');
  if (!generation || !stale_ms || !validators_size || bytes.size() - at < *validators_size)
    return std::nullopt;
  EntryMeta meta;
  meta.tag_generation = *generation;
  meta.stale_if_error = std::chrono::milliseconds(*stale_ms);
  meta.validators.assign(bytes.substr(at, *validators_size));
  at += *validators_size;
  while (at < bytes.size()) {
    const auto end = bytes.find('\n', at);
    if (end == std::string_view::npos) return std::nullopt;
    meta.tags.emplace_back(bytes.substr(at, end - at));
    at = end + 1;
  }
  return meta;
}

cache::TimePoint serve_on_error_until(const cache::Entry& entry) {
  if (entry.meta.empty()) return entry.stale_if_error_until;
  const auto meta = EntryMeta::decode(entry.meta);
  if (!meta) return entry.stale_if_error_until;
  return std::min(entry.stale_if_error_until, entry.soft_expiry + meta->stale_if_error);
}

bool tags_purged(const cache::Entry& entry, const TagEpochs& tags) {
  if (entry.meta.empty()) return false;
  const auto generation = EntryMeta::generation_of(entry.meta);
  if (generation && tags.generation() <= *generation) return false;
  const auto meta = EntryMeta::decode(entry.meta);
  return meta && tags.purged_after(meta->tags, meta->tag_generation);
}

}  // namespace corral::stampede
