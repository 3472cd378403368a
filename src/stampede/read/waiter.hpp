// A request waiting for a flight (leader or follower), and the answers of requests that get no
// fetch of their own (on_overflow).
#pragma once

#include <utility>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "origin/origin.hpp"
#include "stampede/policy/policy_ref.hpp"
#include "stampede/read/flight.hpp"
#include "upstream/reply_target.hpp"

namespace corral::stampede {

// What a waiter needs of its policy, copied out: flights hold their waiters and the policy set
// holds the flights, so a waiter owning the set would make a cycle that outlives the runtime
// whenever a fetch never ends (shutdown).
struct WaiterSettings {
  WaiterSettings(const PolicyRef& policy, std::shared_ptr<origin::Origin> policy_origin)
      : on_overflow(policy.settings().on_overflow),
        wait_timeout(policy.settings().wait_timeout),
        prefix(policy.settings().prefix),
        runtime(policy.set->runtimes[policy.index]),
        stats(policy.set->stats[policy.index]),
        source(std::move(policy_origin)) {}

  config::OnOverflow on_overflow;
  config::Duration wait_timeout;
  std::string prefix;
  std::weak_ptr<PolicyRuntime> runtime;
  std::shared_ptr<PolicyStats> stats;
  std::shared_ptr<origin::Origin> source;  // for an uncached read (on_overflow: passthrough)
};

class Engine;

// One read straight from `origin`, neither coalesced nor cached; its answer goes to the target.
void fetch_uncached(origin::Origin& origin, std::span<const std::string_view> argv,
                    const std::shared_ptr<upstream::ReplyTarget>& target, std::uint64_t tag);

// The answer for a request that gets no fetch of its own (max_waiters reached, wait_timeout
// passed, the origin queue full or its wait too long): on_overflow decides between the stale copy,
// an error and an uncached origin read. `argv` is needed for the last one only.
void answer_without_fetch(Engine* engine, const WaiterSettings& policy,
                          const std::optional<std::string>& stale,
                          std::span<const std::string_view> argv, std::string_view reason,
                          const std::shared_ptr<upstream::ReplyTarget>& target, std::uint64_t tag);

// A request waiting for a flight (leader or follower), on its own io thread. It ends exactly
// once: the flight's result, or its wait_timeout, whichever comes first. Its pending timer owns
// it (the flight only points to it), so an io_context shut down with flights still open takes
// its waiters with it.
class Waiter final : public FlightWaiter, public std::enable_shared_from_this<Waiter> {
 public:
  Waiter(const std::shared_ptr<Engine>& engine, WaiterSettings policy,
         std::shared_ptr<upstream::ReplyTarget> target, std::uint64_t tag);

  // `flight_key` set: a follower, which leaves the flight when it gives up. `stale`: the copy
  // served on timeout (on_overflow: stale). `argv`: kept for on_overflow: passthrough.
  void wait(const std::shared_ptr<Flight>& flight, std::optional<std::string> flight_key,
            std::optional<std::string> stale, std::span<const std::string_view> argv);
  // On the waiter's thread.
  void deliver(const FlightResult& result);

  void flight_done(std::shared_ptr<FlightWaiter> self,
                   const std::shared_ptr<Flight>& flight) override;

 private:
  void on_timeout();
  // Tells the target how long the request waited (slowlog phases). `fetched`: the flight ended
  // with an answer, rather than with no fetch at all (overflow, timeout).
  void note_phases(const std::shared_ptr<upstream::ReplyTarget>& target, bool fetched,
                   std::chrono::nanoseconds lock_wait = {}) const;
  void release();  // drops the thread-bound parts once finished

  boost::asio::any_io_executor executor_;
  std::weak_ptr<Engine> engine_;  // weak: an origin holding fetches must not keep it alive
  WaiterSettings policy_;
  std::shared_ptr<upstream::ReplyTarget> target_;
  std::uint64_t tag_;
  std::atomic<bool> finished_{false};
  std::optional<boost::asio::steady_timer> timer_;
  std::chrono::steady_clock::time_point waiting_since_;
  std::weak_ptr<Flight> flight_;  // weak: the flight holds its waiters
  std::optional<std::string> flight_key_;
  std::optional<std::string> stale_;
  std::vector<std::string> argv_;
};

}  // namespace corral::stampede
