// The phases a proxied request's time is split into, as the slowlog and its metrics report them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace corral::slowlog {

enum class Phase : std::uint8_t {
  queued,     // arrived, but waited in the client's pipeline (full pipeline, drain, CLIENT PAUSE)
  cache,      // the proxy's own work on a cached read (lookup, serve)
  coalesced,  // waited for another request's origin fetch of the same key
  lock,       // waited for the fleet lock held by another process
  origin,     // this request's own origin fetch
  upstream,   // forwarded: from hand-off to the upstream's reply
};
inline constexpr std::size_t kPhaseCount = 6;
inline constexpr std::array<std::string_view, kPhaseCount> kPhaseNames = {
    "queued", "cache_lookup", "coalesced_wait", "lock_wait", "origin_fetch", "upstream"};

// Microseconds per phase of one request. Saturates at ~71 minutes, far past any timeout.
struct Phases {
  std::array<std::uint32_t, kPhaseCount> micros{};

  std::uint32_t& operator[](Phase phase) { return micros[static_cast<std::size_t>(phase)]; }
  std::uint32_t operator[](Phase phase) const { return micros[static_cast<std::size_t>(phase)]; }
  std::uint64_t total() const {
    std::uint64_t sum = 0;
    for (const auto m : micros) sum += m;
    return sum;
  }
};

inline std::uint32_t saturated_micros(std::int64_t micros) {
  if (micros <= 0) return 0;
  return micros > 0xffffffffLL ? 0xffffffffu : static_cast<std::uint32_t>(micros);
}

}  // namespace corral::slowlog
