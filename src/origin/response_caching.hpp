// HTTP caching as a shared cache (a CDN) applies it to one response: Cache-Control directives,
// Age, Expires against Date, validators and Surrogate-Key / Cache-Tag tags. Pure (no I/O).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "origin/origin.hpp"

namespace corral::origin {

// The directives of one Cache-Control field value (several field lines joined with ", ").
// Names are case-insensitive; values may be tokens or quoted strings; the first occurrence of a
// directive wins. Seconds saturate at 2^31 as RFC 9111 asks.
struct CacheControl {
  std::optional<std::int64_t> max_age;
  std::optional<std::int64_t> s_maxage;
  std::optional<std::int64_t> stale_while_revalidate;
  std::optional<std::int64_t> stale_if_error;
  // max-age or s-maxage present but not delta-seconds ("max-age=soon"): RFC 9111 section 4.2.1
  // encourages treating such a response as stale.
  bool invalid_freshness = false;
  bool no_store = false;
  bool no_cache = false;    // also its qualified form no-cache="field"
  bool is_private = false;  // also private="field": a shared cache keeps none of it
};

CacheControl parse_cache_control(std::string_view value);

// Surrogate-Key and Cache-Tag values: tags separated by spaces or commas, duplicates dropped,
// at most kMaxTags tags of at most kMaxTagLength bytes (longer ones are ignored, so one odd
// header cannot bloat every entry).
inline constexpr std::size_t kMaxTags = 32;
inline constexpr std::size_t kMaxTagLength = 128;
void parse_tags(std::string_view value, std::vector<std::string>& tags);

// The header fields of a response that caching reads (empty: absent).
struct ResponseHeaders {
  std::string_view cache_control;
  std::string_view expires;
  std::string_view date;
  std::string_view age;
  std::string_view etag;
  std::string_view last_modified;
  std::string_view surrogate_key;
  std::string_view cache_tag;
};

// Whether the response's freshness headers count (`cache_control: honor`) or only its validators
// and tags (`ignore`).
enum class FreshnessHeaders : std::uint8_t { honor, ignore };

// Freshness is s-maxage, else max-age, else Expires - Date (Date absent: `wall_now`), minus Age,
// capped to [0, max_ttl]; none of them: the policy's ttl (fresh_for unset). no-cache: fresh for
// 0 and no grace, so every read after the store revalidates. no-store and private: not stored.
ResponseCaching evaluate_response(const ResponseHeaders& headers, FreshnessHeaders freshness,
                                  std::chrono::sys_seconds wall_now,
                                  std::chrono::milliseconds max_ttl);

// The validators of a stored response as ResponseCaching::validators carries them, and back.
struct Validators {
  std::string etag;           // as sent, weak prefix included: If-None-Match takes it as is
  std::string last_modified;  // as sent: If-Modified-Since takes it as is
  bool empty() const { return etag.empty() && last_modified.empty(); }
};
std::string encode_validators(std::string_view etag, std::string_view last_modified);
Validators decode_validators(std::string_view encoded);

}  // namespace corral::origin
