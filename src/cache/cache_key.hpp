// The identity of one cached reply: the user's Redis key plus the command variant that produced
// the reply, kept apart so that invalidating a key can drop every variant of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace corral::cache {

struct CacheKey {
  std::string_view user_key;  // the Redis key, binary-safe
  std::string_view variant;   // what shapes the reply: "GET", or e.g. "HGET" + '\0' + field
};

inline bool operator==(const CacheKey& a, const CacheKey& b) {
  return a.user_key == b.user_key && a.variant == b.variant;
}

// One string per CacheKey, for tables keyed by a single string (singleflight, backoff). The user
// key's length goes first (LEB128) so the encoding is injective even when keys contain '\0':
// ("a\0b", "c") and ("a", "b\0c") encode differently.
inline std::string encode_cache_key(CacheKey key) {
  std::string out;
  out.reserve(key.user_key.size() + key.variant.size() + 5);
  std::uint64_t length = key.user_key.size();
  do {
    const auto low = static_cast<char>(length & 0x7f);
    length >>= 7;
    out.push_back(length != 0 ? static_cast<char>(low | 0x80) : low);
  } while (length != 0);
  out.append(key.user_key);
  out.append(key.variant);
  return out;
}

}  // namespace corral::cache
