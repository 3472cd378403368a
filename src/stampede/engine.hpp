// The cached-read path of one io thread (ReadThrough's implementation): hits, misses, refreshes,
// MGET key by key, and the bookkeeping of writes that pass through.
//
//   hit      handle_read -> serve_key: store lookup fresh/stale -> reply now
//                           -> maybe_refresh: stale (grace), or early (refresh_timing) -> refresh
//   miss     serve_key -> plan_miss: flight table join
//              leader   -> Waiter on the flight + Fetch::start -> a slot of the policy's origin
//                          queue (or a wait in it, in order) -> origin -> store -> flight done
//              follower -> Waiter on the flight (wait_timeout, on_overflow if it expires)
//              overflow -> answer_without_fetch (stale | error | uncached origin read)
//   refresh  refresh: one flight per key, no waiter -> Fetch (background) -> origin -> store;
//            the stale value keeps serving meanwhile; backoff and the breaker may skip it
#pragma once

#include <utility>

#include <cstdint>
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
#include "stampede/hot/hot_reads.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "stampede/policy/policy_ref.hpp"
#include "stampede/read/cached_command.hpp"
#include "stampede/read/fetch.hpp"
#include "stampede/read/mget_assembly.hpp"
#include "stampede/read/read_through.hpp"
#include "upstream/reply_target.hpp"

namespace corral::stampede {

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
  // Fleet mode: a miss was answered with the shared copy in grace; refresh it in the background
  // (`delta`: the copy's recompute time, used when this process kept no copy of it).
  void refresh_shared_copy(std::string_view key, cache::Duration delta);

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
  // What resolve_version did with a read of a versioned policy.
  enum class VersionRead : std::uint8_t {
    resolved,        // the current version is in `variant_`, the versioned key in `versioned_argv_`
    passes_through,  // the key names its version itself: read as it is, uncached
    answered,        // no current version: the client got an error
  };
  VersionRead resolve_version(const PolicyRef& policy, std::span<const std::string_view> argv,
                              std::uint64_t tag,
                              const std::shared_ptr<upstream::ReplyTarget>& target);
  // Appends "@v<version>" to `variant_` and points `versioned_argv_` at `<key>:v<version>`.
  void use_version(std::span<const std::string_view> argv, std::uint64_t version);
  bool write_pending(std::string_view user_key) const;
  // A GET of a key outside every policy: served by the hot-key cache when the key is hot.
  bool serve_hot(std::string_view command, std::span<const std::string_view> argv,
                 std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target);
  // The key's tracking link is down or silent: a write may be hiding behind its cached copy.
  bool in_tracking_gap(std::string_view user_key) const;
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
  std::shared_ptr<HotReads> hot_reads_;  // null unless hot_keys.cache
};

}  // namespace corral::stampede
