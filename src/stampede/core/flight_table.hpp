// Bookkeeping for request coalescing (singleflight), without any I/O: which cache keys have an
// origin fetch in flight, and how many requests wait on each, so the waiters stay bounded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/settings.hpp"

namespace corral::stampede {

enum class FlightRole : std::uint8_t {
  leader,    // no fetch was in flight: the caller fetches, then calls finish()
  follower,  // joined the fetch in flight: wait on its payload; leave() when giving up early
  overflow,  // max_waiters already wait: see overflow_action()
};

enum class OverflowAction : std::uint8_t { serve_stale, fail, passthrough };

// What a request that found the waiter queue full does. `stale` serves the cached copy when
// there is one; without one it fails (an error reply) rather than adding load on the origin.
// `passthrough` goes to the origin directly, uncoalesced.
constexpr OverflowAction overflow_action(config::OnOverflow on_overflow, bool have_stale_copy) {
  switch (on_overflow) {
    case config::OnOverflow::stale:
      return have_stale_copy ? OverflowAction::serve_stale : OverflowAction::fail;
    case config::OnOverflow::error:
      return OverflowAction::fail;
    case config::OnOverflow::passthrough:
      return OverflowAction::passthrough;
  }
  return OverflowAction::fail;
}

// Keys are strings (cache::encode_cache_key). `Payload` is whatever the asynchronous layer needs
// to hand the result to waiters (a promise, a channel, a list of handlers); the table only
// creates it for the leader and shares it with followers, so it outlives finish() while any
// follower still holds it. Thread-safe, sharded by key with a mutex per shard; every method is
// synchronous and holds one shard lock for a map operation only.
template <class Payload>
class FlightTable {
 public:
  struct Ticket {
    FlightRole role;
    std::shared_ptr<Payload> flight;  // null on overflow
  };

  explicit FlightTable(std::size_t shards = 16) : shards_(shards == 0 ? 1 : shards) {}

  // Starts a flight for `key` or joins the one in flight as one of at most `max_waiters`
  // followers. `make_payload()` (returning std::shared_ptr<Payload>) runs only for a leader.
  template <class MakePayload>
  Ticket join(std::string_view key, std::size_t max_waiters, MakePayload&& make_payload) {
    Shard& shard = shard_for(key);
    std::lock_guard lock(shard.mutex);
    const auto found = shard.flights.find(key);
    if (found == shard.flights.end()) {
      std::shared_ptr<Payload> payload = make_payload();
      shard.flights.emplace(std::string(key), Flight{payload, 0});
      return {FlightRole::leader, std::move(payload)};
    }
    Flight& flight = found->second;
    if (flight.waiters >= max_waiters) return {FlightRole::overflow, nullptr};
    ++flight.waiters;
    return {FlightRole::follower, flight.payload};
  }
  Ticket join(std::string_view key, std::size_t max_waiters) {
    return join(key, max_waiters, [] { return std::make_shared<Payload>(); });
  }

  // A follower of `flight` stopped waiting (timeout, client gone), freeing its place.
  void leave(std::string_view key, const std::shared_ptr<Payload>& flight) {
    Shard& shard = shard_for(key);
    std::lock_guard lock(shard.mutex);
    const auto found = shard.flights.find(key);
    if (found != shard.flights.end() && found->second.payload == flight &&
        found->second.waiters > 0) {
      --found->second.waiters;
    }
  }

  // The leader of `flight` is done: the key has no flight any more (the next join leads a new
  // one). Returns how many followers were still waiting (the coalesced requests). A stale call
  // for a flight that is already gone changes nothing and returns 0.
  std::size_t finish(std::string_view key, const std::shared_ptr<Payload>& flight) {
    Shard& shard = shard_for(key);
    std::lock_guard lock(shard.mutex);
    const auto found = shard.flights.find(key);
    if (found == shard.flights.end() || found->second.payload != flight) return 0;
    const std::size_t waiters = found->second.waiters;
    shard.flights.erase(found);
    return waiters;
  }

  // Followers waiting on the flight for `key`; nullopt when none is in flight.
  std::optional<std::size_t> waiters(std::string_view key) const {
    const Shard& shard = shard_for(key);
    std::lock_guard lock(shard.mutex);
    const auto found = shard.flights.find(key);
    if (found == shard.flights.end()) return std::nullopt;
    return found->second.waiters;
  }

  std::size_t size() const {
    std::size_t total = 0;
    for (const Shard& shard : shards_) {
      std::lock_guard lock(shard.mutex);
      total += shard.flights.size();
    }
    return total;
  }

 private:
  struct Flight {
    std::shared_ptr<Payload> payload;
    std::size_t waiters;
  };
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  struct alignas(64) Shard {
    mutable std::mutex mutex;
    std::unordered_map<std::string, Flight, KeyHash, std::equal_to<>> flights;
  };

  Shard& shard_for(std::string_view key) { return shards_[KeyHash{}(key) % shards_.size()]; }
  const Shard& shard_for(std::string_view key) const {
    return shards_[KeyHash{}(key) % shards_.size()];
  }

  std::vector<Shard> shards_;
};

}  // namespace corral::stampede
