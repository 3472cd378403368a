// Fleet mode's view of one key in the upstream Redis: the plain key (fresh value, fresh TTL), the
// shadow hash (value + stored/delta/soft metadata, long TTL) and the refresh lock, read and
// written by Lua scripts so every step is atomic and uses Redis's clock, the fleet's one clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/script.hpp"

namespace corral::stampede::fleet {

struct FleetKeys {
  explicit FleetKeys(std::string_view user_key);
  std::string plain;   // the user's key: other Redis clients read the fresh value here
  std::string shadow;  // same slot (hash tag): value and metadata, kept through grace
  std::string lock;    // same slot: the token of the process refreshing the key
};

// KEYS plain shadow lock -> {now_ms, value, stored_ms, delta_ms, soft_ms, nil, shadow_pttl,
// plain_exists, lock_pttl, validators, tags, windows}
const upstream::Script& read_script();
// KEYS plain shadow lock, ARGV token lock_ttl_ms min_left_ms -> 1 won, 0 held, 2 already fresh:
// the shared copy has more than min_left_ms of freshness left, so someone refreshed since the
// caller's copy went stale (min_left 0) or was refreshed early (min_left ttl/2). -1: no check.
const upstream::Script& lock_script();
// KEYS plain shadow lock, ARGV token value fresh_ms shadow_ms delta_ms nil validators tags windows
// -> 1 written (and the lock released), 0 fenced: the lock is no longer this token's, nothing
// written. `validators` (an http origin's ETag / Last-Modified, may be empty) let any process
// revalidate; `tags` (encode_tags) record the purge count of each of the value's tags when it was
// fetched; `windows` (encode_windows) the copy's own grace and stale-if-error.
const upstream::Script& write_script();
// KEYS lock, ARGV token -> 1 released, 0 not ours (compare-and-delete).
const upstream::Script& release_script();

// A tag of a shared copy and its key's value in Redis (its purge count) when the copy was fetched:
// a larger count now means the copy was purged.
struct TagCount {
  std::string tag;
  std::uint64_t count = 0;
};
std::string encode_tags(const std::vector<TagCount>& tags);  // "tag count\n" per tag
std::vector<TagCount> decode_tags(std::string_view text);    // skips malformed lines

// A copy's grace and stale-if-error windows. An http response's stale-while-revalidate,
// stale-if-error or no-cache make them differ from the policy's, so the writer records them and
// every process serves the shared copy as the one that fetched it would.
struct CopyWindows {
  std::chrono::milliseconds grace{0};
  std::chrono::milliseconds stale_if_error{0};
};
std::string encode_windows(const CopyWindows& windows);  // "grace_ms stale_if_error_ms"

// A decoded read_script reply.
struct SharedState {
  std::chrono::milliseconds fresh_for{0};   // > 0: fresh
  std::chrono::milliseconds shadow_for{0};  // the shadow's PTTL; 0: no shadow
  std::chrono::milliseconds delta{0};
  std::chrono::milliseconds lock_for{0};  // > 0: someone holds the refresh lock
  std::int64_t stored_ms = 0;             // Redis time the value was written
  bool has_value = false;                 // a shadow with a value or a cached nil
  bool nil = false;                       // the origin said "not found"
  bool deleted = false;                   // the plain key was deleted before its expiry
  std::string value;                      // the raw value (not RESP encoded)
  std::string validators;                 // origin::ResponseCaching::validators of the value
  std::vector<TagCount> tags;             // the value's tags with their purge counts
  std::optional<CopyWindows> windows;     // as written; unset (an older writer): the policy's

  bool fresh() const { return has_value && fresh_for.count() > 0; }
};

// nullopt when the reply is not what read_script returns (an error, a garbled array).
std::optional<SharedState> parse_state(std::string_view reply);

// The copy's windows: its own when recorded, else the policy's. A cached "not found" has no grace.
CopyWindows copy_windows(const SharedState& state, const CopyWindows& policy);
// How long a local copy of `state` may serve: the shadow's life, no further than its grace.
std::chrono::milliseconds usable_for(const SharedState& state, const CopyWindows& windows);

}  // namespace corral::stampede::fleet
