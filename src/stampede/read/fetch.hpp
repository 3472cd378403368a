// One origin request on behalf of the leader keys of a miss, a refresh or an MGET batch: admission
// (origin queue, breaker), the request, and the outcome stored and handed to every waiter of each
// flight.
#pragma once

#include <utility>

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "cache/cache_key.hpp"
#include "cache/random.hpp"
#include "origin/origin.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "stampede/policy/policy_ref.hpp"
#include "stampede/read/flight.hpp"
#include "stampede/read/mget_assembly.hpp"

namespace corral::stampede {

// One leader key of a fetch: finishes its flight with the origin's answer.
struct KeyFetch {
  PolicyRef policy;
  std::string user_key;
  std::string variant;
  std::string flight_key;
  std::shared_ptr<Flight> flight;
  cache::Duration previous_delta{};
  bool background = false;
  bool early = false;  // XFetch (counted apart from grace refreshes)
  bool active = true;  // false once finished without a fetch (breaker, origin queue)
  std::shared_ptr<CircuitBreaker> breaker;
  Admission admission = Admission::allowed;

  cache::CacheKey key() const { return {user_key, variant}; }
};

// One origin request on behalf of leader keys (and of an MGET's uncached parts). Owned by the
// origin's callback (while queued for a slot: by its queue timer), never by a client.
class Engine;

class Fetch : public std::enable_shared_from_this<Fetch> {
 public:
  struct Element {    // one key of a batched MGET, in order
    int leader = -1;  // index in `leaders`, or -1: an uncached part of `assembly`
    std::string key;
    std::shared_ptr<MgetAssembly> assembly;
    std::size_t part = 0;
  };

  Fetch(const boost::asio::any_io_executor& executor, CacheRuntime& runtime, cache::Random* random,
        std::shared_ptr<origin::Origin> origin)
      : executor_(executor), runtime_(runtime), random_(random), origin_(std::move(origin)) {}

  std::vector<KeyFetch> leaders;
  std::vector<Element> elements;  // empty: a single-key fetch of leaders[0] with `argv`
  // Asked for another fetch of a key: an invalidation superseded this fill (on_invalidate:
  // refresh), or the fleet's shared copy was already stale (it is served, and refreshed).
  std::weak_ptr<Engine> refresh_again;

  // Takes an origin slot of each policy (waiting in its queue past max_origin_concurrency),
  // applies the breakers, then asks the origin. `argv` is the single-key command (ignored for an
  // MGET batch, whose command is built from `elements`).
  void start(std::span<const std::string_view> argv);

 private:
  // fetch_admission.cpp: the origin queue.
  // Takes a slot of each policy the active leaders need, one policy at a time in one order for
  // every fetch (so two batches never hold slots the other waits for); false while it waits in a
  // queue (it resumes on its own thread: admitted() or queue_timed_out()).
  bool admit();
  bool has_clients(const PolicyRef& policy) const;  // a leader of `policy` is no refresh
  OriginLimits limits(const PolicyRef& policy) const;
  void wait_in_queue(const PolicyRef& policy, std::uint64_t ticket);
  void admitted(std::chrono::nanoseconds waited);
  void queue_timed_out(std::uint64_t wait);
  // No slot for `policy`: its leaders end without a fetch and their waiters get on_overflow.
  void reject(const PolicyRef& policy, QueueRejection reason);
  // The slot goes to the oldest fetch queued for it, or back to the policy.
  void release_slot(const PolicyRef& policy);

  // After admission: the breakers, then the request.
  void proceed(std::span<const std::string_view> argv);
  void on_result(const origin::FetchResult& result);
  void complete_key(KeyFetch& key, origin::Outcome outcome, std::string_view reply,
                    std::chrono::nanoseconds duration,
                    const std::optional<origin::SharedLifetime>& shared = std::nullopt,
                    const origin::ResponseCaching* caching = nullptr,
                    std::chrono::nanoseconds lock_wait = {});
  // Stores the answer of a key under its policy's windows (and the response's HTTP caching).
  void store_key(KeyFetch& key, std::string_view reply, bool negative,
                 std::chrono::nanoseconds duration,
                 const std::optional<origin::SharedLifetime>& shared,
                 const origin::ResponseCaching* caching);
  // A single-key fetch whose stored copy has validators asks the origin conditionally.
  bool ask_conditionally(origin::Origin& origin, std::span<const std::string_view> argv,
                         origin::FetchCallback& done);
  // A 304 stands for the copy revalidate() was asked about; false when none was.
  bool resolve_not_modified(origin::FetchResult& result, origin::ResponseCaching& caching);
  // Ends the key's flight (after anything to store was stored) and wakes its waiters.
  void finish_key(KeyFetch& key, FlightResult result);
  void refetch_after_invalidation(const KeyFetch& key);
  // For a failed or refused fetch: the key's stale-if-error copy if it has one, else `error`.
  FlightResult stale_or_failure(const KeyFetch& key, std::string_view error);
  void fail_elements(origin::Outcome outcome, std::string_view reply,
                     std::chrono::nanoseconds duration);
  cache::Random& random() { return random_ ? *random_ : cache::thread_random(); }
  // Asks the origin, after the policies' fetch_delay (a simulated slow origin) if any.
  void send(std::span<const std::string_view> argv);
  void ask_origin(std::span<const std::string_view> argv);

  boost::asio::any_io_executor executor_;
  CacheRuntime& runtime_;
  cache::Random* random_;
  // Weak: an origin holds its pending callbacks, which hold this fetch. Origins finish the
  // fetches they started even once destroyed (a reload replaces them); one replaced before a
  // delayed fetch starts fails it.
  std::weak_ptr<origin::Origin> origin_;
  std::vector<PolicyRef> counted_;       // policies whose origin slot this fetch holds
  std::optional<PolicyRef> queued_for_;  // the policy whose queue this fetch waits in
  std::uint64_t queue_ticket_ = 0;
  std::uint64_t queue_waits_ = 0;  // tells the current wait's timer from an earlier one's
  std::optional<boost::asio::steady_timer> queue_timer_;  // its pending wait owns this fetch
  std::vector<std::string> queued_argv_;
  std::chrono::nanoseconds delay_{0};
  std::vector<std::string> delayed_argv_;
  std::optional<boost::asio::steady_timer> delay_timer_;
  std::uint64_t tag_generation_ = 0;  // TagEpochs::generation() when the fetch began
  // The stored copy a conditional request asked about: what a 304 answers with.
  std::optional<std::string> revalidated_value_;
  std::vector<std::string> revalidated_tags_;
  std::string revalidated_validators_;
};

}  // namespace corral::stampede
