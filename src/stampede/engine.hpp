// Internal to the read-through layer: the per-thread engine and the objects of one miss (a
// waiter of a flight, an origin fetch, an MGET being assembled). See read_through.hpp.
#pragma once

#include <utility>

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "cache/cache_key.hpp"
#include "cache/entry.hpp"
#include "cache/random.hpp"
#include "origin/origin.hpp"
#include "stampede/cache_runtime.hpp"
#include "stampede/cached_command.hpp"
#include "stampede/policy_runtime.hpp"
#include "stampede/read_through.hpp"
#include "upstream/reply_target.hpp"

namespace corral::stampede {

// One policy of one snapshot; holding the snapshot keeps the settings valid across a reload.
struct PolicyRef {
  std::shared_ptr<const PolicySet> set;
  std::size_t index = 0;

  const config::PolicySettings& settings() const { return set->settings[index]; }
  PolicyRuntime& runtime() const { return *set->runtimes[index]; }
  PolicyStats& stats() const { return *set->stats[index]; }
};

// What a waiter needs of its policy, copied out: flights hold their waiters and the policy set
// holds the flights, so a waiter owning the set would make a cycle that outlives the runtime
// whenever a fetch never ends (shutdown).
struct WaitPolicy {
  WaitPolicy(const PolicyRef& policy, std::shared_ptr<origin::Origin> policy_origin)
      : on_overflow(policy.settings().on_overflow),
        origin(policy.settings().origin),
        wait_timeout(policy.settings().wait_timeout),
        prefix(policy.settings().prefix),
        runtime(policy.set->runtimes[policy.index]),
        stats(policy.set->stats[policy.index]),
        source(std::move(policy_origin)) {}

  config::OnOverflow on_overflow;
  config::OriginKind origin;
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

// The answer for a request that gets no fetch of its own (waiter queue full, wait timed out,
// origin concurrency cap): on_overflow decides between the stale copy, an error and an
// uncached origin read. `argv` is needed for the last one only.
void answer_without_fetch(Engine* engine, const WaitPolicy& policy,
                          const std::optional<std::string>& stale,
                          std::span<const std::string_view> argv, std::string_view reason,
                          const std::shared_ptr<upstream::ReplyTarget>& target, std::uint64_t tag);

// A request waiting for a flight (leader or follower), on its own io thread. It ends exactly
// once: the flight's result, or its wait_timeout, whichever comes first. Its pending timer owns
// it (the flight only points to it), so an io_context shut down with flights still open takes
// its waiters with it.
class Waiter final : public FlightWaiter, public std::enable_shared_from_this<Waiter> {
 public:
  Waiter(const std::shared_ptr<Engine>& engine, WaitPolicy policy,
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
  void release();  // drops the thread-bound parts once finished

  boost::asio::any_io_executor executor_;
  std::weak_ptr<Engine> engine_;  // weak: an origin holding fetches must not keep it alive
  WaitPolicy policy_;
  std::shared_ptr<upstream::ReplyTarget> target_;
  std::uint64_t tag_;
  std::atomic<bool> finished_{false};
  std::optional<boost::asio::steady_timer> timer_;
  std::weak_ptr<Flight> flight_;  // weak: the flight holds its waiters
  std::optional<std::string> flight_key_;
  std::optional<std::string> stale_;
  std::vector<std::string> argv_;
};

// An MGET answered part by part (cache hits, flights, the batch fetch); replies to the client
// once every part is in. Lives on one io thread; part replies arrive as on_reply(part index).
class MgetAssembly final : public upstream::ReplyTarget {
 public:
  MgetAssembly(std::shared_ptr<upstream::ReplyTarget> client, std::uint64_t tag, std::size_t parts);
  void set_part(std::size_t part, std::string_view reply);
  void on_reply(std::uint64_t part, std::string_view reply) override;
  void on_failure(std::uint64_t part, std::string_view error) override;

 private:
  void part_done();

  std::shared_ptr<upstream::ReplyTarget> client_;
  std::uint64_t tag_;
  std::vector<std::string> parts_;
  std::size_t pending_;
  std::optional<std::string> error_reply_;  // a part's error reply answers the whole MGET
  std::optional<std::string> failure_;
};

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
  bool active = true;  // false once finished without a fetch (breaker, concurrency)
  std::shared_ptr<CircuitBreaker> breaker;
  Admission admission = Admission::allowed;

  cache::CacheKey key() const { return {user_key, variant}; }
};

// One origin request on behalf of leader keys (and of an MGET's uncached parts). Owned by the
// origin's callback, never by a client.
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

  // Applies the concurrency cap and the breakers, then asks the origin. `argv` is the
  // single-key command (ignored for an MGET batch, whose command is built from `elements`).
  void start(std::span<const std::string_view> argv);

 private:
  void on_result(const origin::FetchResult& result);
  void complete_key(KeyFetch& key, origin::Outcome outcome, std::string_view reply,
                    std::chrono::nanoseconds duration,
                    const std::optional<origin::SharedLifetime>& shared = std::nullopt);
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
  std::vector<PolicyRef> counted_;  // policies whose concurrency count this fetch holds
  std::chrono::nanoseconds delay_{0};
  std::vector<std::string> delayed_argv_;
  std::optional<boost::asio::steady_timer> delay_timer_;
};

// The cached-read path of one io thread (ReadThrough's implementation).
class Engine : public std::enable_shared_from_this<Engine> {
 public:
  Engine(const boost::asio::any_io_executor& executor, CacheRuntime& runtime,
         ReadThroughOptions options);

  void start();  // the sweeper, when this thread claims it
  void stop();

  bool handle_read(std::string_view command, std::span<const std::string_view> argv,
                   std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target);
  std::shared_ptr<upstream::ReplyTarget> wrap_write(
      std::span<const std::string_view> argv, std::span<const std::size_t> key_indices,
      const std::shared_ptr<upstream::ReplyTarget>& target);
  void flush_all();
  std::optional<std::string> refused_write(std::span<const std::string_view> argv,
                                           std::span<const std::size_t> key_indices);

  const boost::asio::any_io_executor& executor() const { return executor_; }
  CacheRuntime& runtime() { return runtime_; }
  cache::Random* random() const { return random_; }
  // The origin of a policy of the current snapshot (redis, http, or a fleet / versioned layer
  // over one).
  const std::shared_ptr<origin::Origin>& origin_for(const PolicyRef& policy) const {
    return origins_[policy.index];
  }
  // A write to `user_key` was answered: reads of it may use the cache again.
  void write_done(const std::string& user_key);

 private:
  enum class MissPlan { answered, waiting, lead, uncached };

  const PolicySet& snapshot();

 public:
  // on_invalidate: refresh: fetches a just-invalidated key's GET reply again in the background
  // (other cached variants of it are simply refetched on their next read).
  void refresh_invalidated(std::string_view key);
  // Fleet mode: a miss was answered with the shared copy in grace; refresh it in the background.
  void refresh_shared_copy(std::string_view key);

 private:
  bool serve_key(const PolicyRef& policy, cache::CacheKey key,
                 std::span<const std::string_view> argv, std::uint64_t tag,
                 const std::shared_ptr<upstream::ReplyTarget>& target);
  // A hit's XFetch / grace refresh and the miss path, shared by single keys and MGET parts.
  void maybe_refresh(const PolicyRef& policy, cache::CacheKey key,
                     std::span<const std::string_view> argv, const cache::Entry& entry,
                     cache::EntryState state, cache::TimePoint now);
  void refresh(const PolicyRef& policy, cache::CacheKey key, std::span<const std::string_view> argv,
               cache::Duration previous_delta, bool early);
  MissPlan plan_miss(const PolicyRef& policy, cache::CacheKey key,
                     std::span<const std::string_view> argv, const cache::Entry* copy,
                     const std::shared_ptr<upstream::ReplyTarget>& target, std::uint64_t tag,
                     KeyFetch& lead);
  bool handle_mget(std::span<const std::string_view> argv, std::uint64_t tag,
                   const std::shared_ptr<upstream::ReplyTarget>& target);
  // MGET parts of policies whose origin is not the upstream Redis itself: each one a GET.
  void serve_mget_part(const PolicyRef& policy, std::string_view user_key, std::size_t part,
                       const std::shared_ptr<MgetAssembly>& assembly);
  // For a versioned policy: the current version into `variant_` and the versioned key into
  // `versioned_argv_`. False when the read is not resolved (answered with an error or, for a
  // key naming its version itself, left to pass through: `answered` tells which).
  bool resolve_version(const PolicyRef& policy, std::span<const std::string_view> argv,
                       std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target,
                       bool& answered);
  // Appends "@v<version>" to `variant_` and points `versioned_argv_` at `<key>:v<version>`.
  void use_version(std::span<const std::string_view> argv, std::uint64_t version);
  bool write_pending(std::string_view user_key) const;
  void sweep();

  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };

  boost::asio::any_io_executor executor_;
  CacheRuntime& runtime_;
  std::shared_ptr<origin::Origin> redis_origin_;
  OriginFactory make_origin_;
  std::vector<std::shared_ptr<origin::Origin>> origins_;  // one per policy of snapshot_
  cache::Random* random_;
  bool sweeper_wanted_;
  bool sweeper_running_ = false;
  std::optional<boost::asio::steady_timer> sweep_timer_;
  std::shared_ptr<const PolicySet> snapshot_;
  std::uint64_t snapshot_version_ = 0;
  std::vector<PolicyRef> policy_refs_;  // one per policy of snapshot_: no refcounting per hit
  // Writes to policy keys sent from this thread and not yet answered: reads of those keys
  // bypass the cache so a client always reads its own pipelined writes.
  std::unordered_map<std::string, std::uint32_t, KeyHash, std::equal_to<>> pending_writes_;
  // Reused per request, so a hit allocates nothing beyond the reply copy.
  std::string variant_;
  std::string versioned_key_;
  std::vector<std::string_view> versioned_argv_;
  cache::Entry entry_;
  std::string mget_values_;
  std::string mget_reply_;
  struct MgetPart {
    int policy = -1;  // index in the snapshot, -1: not cached
    std::size_t offset = 0;
    std::size_t size = 0;
    bool hit = false;
  };
  std::vector<MgetPart> mget_parts_;
};

}  // namespace corral::stampede
