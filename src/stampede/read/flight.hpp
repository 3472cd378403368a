// One in-flight origin fetch shared by its leader and followers on any thread, the waiters it wakes
// and the result it hands them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace corral::stampede {

struct Flight;

// What a finished flight hands to its waiters.
struct FlightResult {
  enum class Kind : std::uint8_t {
    reply,     // `bytes` is the RESP reply to send (the value, a nil, an error reply, or a stale
               // value served because the origin failed)
    failure,   // `bytes` is an error text without the leading '-'
    overflow,  // no fetch was made (the origin queue was full, or no slot came in time):
               // `bytes` is the error text without '-'; each waiter applies on_overflow
  };
  Kind kind = Kind::failure;
  std::string bytes;
  bool stale = false;  // a reply that is the stale-if-error copy (counted when served)
  std::chrono::nanoseconds lock_wait{0};  // the leader's fetch waited this long for a fleet lock
};

// Someone waiting for a flight; lives on one io thread, kept alive by its own wait timer there.
// Flights hold waiters weakly: a waiter never outlives its io_context through a flight left
// unfinished at shutdown.
class FlightWaiter {
 public:
  virtual ~FlightWaiter() = default;
  // Called once, from the thread that finished the flight; implementations hop to their own
  // thread (asio::post, taking `self` along) before touching anything of theirs.
  virtual void flight_done(std::shared_ptr<FlightWaiter> self,
                           const std::shared_ptr<Flight>& flight) = 0;
};

// The payload of one in-flight origin fetch, created by the leader and shared with followers on
// any thread (see FlightTable). The result is written once, under the mutex, and immutable after.
// Always owned by a shared_ptr (the flight table makes it).
struct Flight : std::enable_shared_from_this<Flight> {
  explicit Flight(std::uint64_t fill_ticket) : ticket(fill_ticket) {}

  // Adds a waiter; false when the flight is already done (the caller reads `result` itself).
  bool add(const std::shared_ptr<FlightWaiter>& waiter);
  // Publishes the result and notifies every waiter. Call once.
  void complete(FlightResult flight_result);

  // The store's fill ticket taken when the flight began: a request that sees another ticket
  // now knows the key was invalidated since, and must not take this flight's (older) value.
  const std::uint64_t ticket;
  FlightResult result;  // valid once done

 private:
  mutable std::mutex mutex_;
  bool done_ = false;
  std::vector<std::weak_ptr<FlightWaiter>> waiters_;
  std::size_t compact_at_ = 64;  // waiters gone (timed out) are dropped when the list reaches this
};

}  // namespace corral::stampede
