// What the read-through engine keeps with an entry of an HTTP-caching origin, in the store's
// opaque meta bytes: validators to revalidate it, its tags and the tag generation it was
// fetched at, and its real stale-if-error window (the stored one also keeps it for revalidation).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/entry.hpp"
#include "stampede/core/tag_epochs.hpp"

namespace corral::stampede {

struct EntryMeta {
  std::uint64_t tag_generation = 0;             // TagEpochs::generation() when the fetch began
  std::chrono::milliseconds stale_if_error{0};  // past soft expiry, served only on origin errors
  std::string validators;                       // origin::ResponseCaching::validators
  std::vector<std::string> tags;

  std::string encode() const;
  // nullopt for bytes encode() did not write (an entry without meta has none at all).
  static std::optional<EntryMeta> decode(std::string_view bytes);
  // Just the generation, without allocating: the hit path's check.
  static std::optional<std::uint64_t> generation_of(std::string_view bytes);
};

// Until when the entry may be served because the origin failed: its meta's real window when it
// has one (the stored window then also covers the time it is kept for revalidation).
cache::TimePoint serve_on_error_until(const cache::Entry& entry);

// Whether one of the entry's tags was purged after it was fetched. Costs one atomic load unless
// a purge happened since.
bool tags_purged(const cache::Entry& entry, const TagEpochs& tags);

}  // namespace corral::stampede
