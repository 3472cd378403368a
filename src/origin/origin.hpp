// The origin interface: where a cache miss or a refresh gets its value. One asynchronous call,
// so another origin (HTTP, SQL, gRPC) is one new class behind it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corral::origin {

enum class Outcome : std::uint8_t {
  value,        // a reply worth caching
  nil,          // "not found" ($-1 or *-1): cached for negative_ttl
  error_reply,  // the origin answered with an error (-WRONGTYPE ...): delivered, never cached
  failure,      // no answer (unavailable, connection lost, timeout): the stale-if-error path
};

// The lifetime of a value as a shared store (fleet mode: the upstream Redis) knows it, so every
// process keeps its copy exactly as long: measured from the answer, on the store's clock.
struct SharedLifetime {
  std::chrono::milliseconds fresh_for{0};   // 0: already stale (a shadow copy)
  std::chrono::milliseconds usable_for{0};  // until the shadow copy expires (>= fresh_for)
  std::chrono::milliseconds delta{0};       // the recompute time stored with it, for XFetch
  bool fetched = false;  // this process asked the origin (else: read from the shared store)
  // The copy's stale-if-error window (an http response may widen the policy's); unset: the
  // policy's.
  std::optional<std::chrono::milliseconds> stale_if_error;
};

// Why the engine asks: a cold miss, or a background refresh of a copy it still serves.
enum class FetchReason : std::uint8_t { miss, stale, early };

// What an origin that speaks HTTP caching (Cache-Control, validators, tags) said about keeping
// its answer. Absent: the policy alone decides.
struct ResponseCaching {
  bool store = true;  // false: no-store / private: answered (and coalesced), never kept
  std::optional<std::chrono::milliseconds> fresh_for;       // replaces the policy's (jittered) ttl
  std::optional<std::chrono::milliseconds> grace;           // stale-while-revalidate: at least this
  std::optional<std::chrono::milliseconds> stale_if_error;  // stale-if-error: at least this
  bool revalidate_always = false;  // no-cache: no grace whatever the policy says
  bool not_modified = false;       // a 304 to revalidate(): the stored value stands, no reply bytes
  std::string validators;          // opaque to the engine; handed back to revalidate() later
  std::vector<std::string> tags;   // Surrogate-Key / Cache-Tag: purged by CORRAL.INVALIDATE TAG
};

struct FetchResult {
  FetchResult() = default;
  FetchResult(Outcome what, std::string_view bytes, std::chrono::nanoseconds took,
              std::optional<SharedLifetime> shared = std::nullopt,
              std::chrono::nanoseconds waited_for_lock = {})
      : outcome(what), reply(bytes), duration(took), lock_wait(waited_for_lock), lifetime(shared) {}

  Outcome outcome = Outcome::failure;
  // value / nil / error_reply: one complete RESP2 reply, sent to clients as is.
  // failure: the error text without the leading '-' (e.g. "ERR upstream unavailable").
  // Valid only during the callback.
  std::string_view reply;
  std::chrono::nanoseconds duration{0};    // from fetch() to the answer, by the origin's clock
  std::chrono::nanoseconds lock_wait{0};   // of which spent waiting for another holder's lock
  std::optional<SharedLifetime> lifetime;  // set: overrides the policy's ttl, grace and delta
  std::optional<ResponseCaching> caching;  // set by origins that honour HTTP caching headers
};

using FetchCallback = std::function<void(const FetchResult&)>;

// Contract: fetch() asks for the reply to one read command (argv[0] the command, argv[1] the
// key; an MGET may carry several keys). `done` runs exactly once, on the thread that called
// fetch() and never from within fetch() itself, so callers may hold no state across it. argv
// need only live during the call. Every fetch ends: implementations bound it with a timeout.
class Origin {
 public:
  virtual ~Origin() = default;
  virtual std::string_view name() const = 0;  // the `origin` metrics label
  virtual void fetch(std::span<const std::string_view> argv, FetchCallback done) = 0;
  // A background refresh of a copy still being served (stale, or early by XFetch). Origins that
  // coordinate with other processes tell it from a miss; the rest fetch as usual.
  virtual void refresh(std::span<const std::string_view> argv, FetchReason /*reason*/,
                       FetchCallback done) {
    fetch(argv, std::move(done));
  }
  // A fetch of a key whose stored copy carries `validators` (ResponseCaching::validators of an
  // earlier answer): an origin that understands them may answer caching->not_modified with no
  // reply bytes, meaning that copy is still current. The rest fetch or refresh as usual.
  virtual void revalidate(std::span<const std::string_view> argv, FetchReason reason,
                          std::string_view /*validators*/, FetchCallback done) {
    if (reason == FetchReason::miss) return fetch(argv, std::move(done));
    refresh(argv, reason, std::move(done));
  }
};

// How a RESP reply from a Redis-speaking origin counts (an MGET array is a value even when
// some of its elements are nil).
inline Outcome classify_reply(std::string_view reply) {
  if (!reply.empty() && reply.front() == '-') return Outcome::error_reply;
  if (reply == "$-1\r\n" || reply == "*-1\r\n") return Outcome::nil;
  return Outcome::value;
}

}  // namespace corral::origin
