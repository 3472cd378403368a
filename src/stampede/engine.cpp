// Engine: the request side of the read-through cache on one io thread: hits (with early and
// grace refreshes), misses (coalesced through the policy's flight table), MGET key by key, and
// the invalidation of written keys.
#include "stampede/engine.hpp"

#include <chrono>

#include "resp/encoder.hpp"
#include "stampede/core/entry_meta.hpp"
#include "stampede/core/refresh_timing.hpp"
#include "stampede/fleet/companion_keys.hpp"
#include "stampede/hot/hot_cache.hpp"
#include "stampede/read/waiter.hpp"
#include "stampede/tracking/invalidating_target.hpp"
#include "stampede/versioned/version_key.hpp"

namespace corral::stampede {

namespace {

constexpr auto kSweepInterval = std::chrono::seconds(1);
// Buckets per shard per sweep: with 64 shards, 8k buckets a second, a few microseconds of
// lock each; entries nobody asks for again leave within minutes even in a large cache.
constexpr std::size_t kSweepBuckets = 128;
// Fleet mode: appended to a background refresh's flight key (no real GET variant ends so). Such
// a refresh may wait a whole fetch for the process holding the lock, while a miss meanwhile (the
// local copy was invalidated: the plain key expired in Redis, or a write landed) costs one read
// of the shared copy, so it leads a flight of its own instead of queueing behind the refresh.
constexpr std::string_view kFleetRefreshFlight{"\0fleet-refresh", 14};

std::string overflow_reason(const PolicyRef& policy) {
  return "ERR corral: too many requests waiting for the origin (policy '" +
         policy.settings().prefix + "')";
}

KeyFetch make_lead(const PolicyRef& policy, cache::CacheKey key, std::string flight_key,
                   std::shared_ptr<Flight> flight, cache::Duration previous_delta) {
  KeyFetch lead;
  lead.policy = policy;
  lead.user_key = key.user_key;
  lead.variant = key.variant;
  lead.flight_key = std::move(flight_key);
  lead.flight = std::move(flight);
  lead.previous_delta = previous_delta;
  return lead;
}

}  // namespace

Engine::Engine(const boost::asio::any_io_executor& executor, CacheRuntime& runtime,
               ReadThroughOptions options)
    : executor_(executor),
      runtime_(runtime),
      redis_origin_(std::move(options.redis_origin)),
      make_origin_(std::move(options.make_origin)),
      random_(options.random),
      sweeper_wanted_(options.sweeper) {
  if (runtime_.hot() != nullptr && options.hot_routes) {
    hot_reads_ = std::make_shared<HotReads>(*runtime_.hot(), std::move(options.hot_routes),
                                            runtime_.clock());
  }
}

void Engine::start() {
  if (!sweeper_wanted_ || !runtime_.claim_sweeper()) return;
  sweeper_running_ = true;
  sweep_timer_.emplace(executor_);
  sweep();
}

void Engine::stop() {
  if (!sweeper_running_) return;
  sweeper_running_ = false;
  sweep_timer_.reset();
  runtime_.release_sweeper();
}

void Engine::sweep() {
  sweep_timer_->expires_after(kSweepInterval);
  sweep_timer_->async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    const auto self = weak.lock();
    if (ec || !self || !self->sweeper_running_) return;
    self->runtime_.store().sweep(self->runtime_.clock().now(), kSweepBuckets);
    self->sweep();
  });
}

const PolicySet& Engine::snapshot() {
  const auto version = runtime_.version();
  if (!snapshot_ || version != snapshot_version_) {
    snapshot_ = runtime_.policies();
    snapshot_version_ = version;
    policy_refs_.clear();
    origins_.clear();
    for (std::size_t i = 0; i < snapshot_->settings.size(); ++i) {
      policy_refs_.push_back({snapshot_, i});
      origins_.push_back(make_origin_ ? make_origin_(policy_refs_.back(), redis_origin_)
                                      : redis_origin_);
    }
  }
  return *snapshot_;
}

bool Engine::in_tracking_gap(std::string_view user_key) const {
  const auto& gaps = runtime_.tracking_gaps();
  return gaps.any() && gaps.covers(user_key);
}

bool Engine::write_pending(std::string_view user_key) const {
  return !pending_writes_.empty() && pending_writes_.find(user_key) != pending_writes_.end();
}

void Engine::write_done(const std::string& user_key) {
  const auto found = pending_writes_.find(user_key);
  if (found == pending_writes_.end()) {
    if (hot_reads_) hot_reads_->write_done(user_key);  // a key outside every policy
    return;
  }
  if (--found->second == 0) pending_writes_.erase(found);
}

bool Engine::serve_hot(std::string_view command, std::span<const std::string_view> argv,
                       std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target) {
  return hot_reads_ && argv.size() == 2 && command == "get" &&
         hot_reads_->serve(argv[1], tag, target);
}

bool Engine::handle_read(std::string_view command, std::span<const std::string_view> argv,
                         std::uint64_t tag, const std::shared_ptr<upstream::ReplyTarget>& target) {
  const PolicySet& set = snapshot();
  if (set.settings.empty()) return serve_hot(command, argv, tag, target);
  const auto cached = find_cached_command(command);
  if (!cached) return false;
  if (*cached == CachedCommand::mget) return handle_mget(argv, tag, target);
  // EXISTS of several keys answers a count over all of them: not one key's reply.
  if (argv.size() < 2 || (*cached == CachedCommand::exists && argv.size() != 2)) return false;
  const auto index = set.match(argv[1]);
  if (!index) return serve_hot(command, argv, tag, target);
  if (!mask_has(set.command_masks[*index], *cached)) return false;
  build_variant(*cached, argv, variant_);
  const PolicyRef& policy = policy_refs_[*index];
  std::span<const std::string_view> read_argv = argv;
  if (set.settings[*index].versioned) {
    switch (resolve_version(policy, argv, tag, target)) {
      case VersionRead::passes_through:
        return false;
      case VersionRead::answered:
        return true;
      case VersionRead::resolved:
        break;
    }
    read_argv = versioned_argv_;
  }
  if (write_pending(argv[1])) {
    // Forwarded behind the write on the client's connection when Redis is the origin; other
    // origins are asked directly, uncached.
    if (origin_for(policy) == redis_origin_) return false;
    fetch_uncached(*origin_for(policy), read_argv, target, tag);
    return true;
  }
  return serve_key(policy, {argv[1], variant_}, read_argv, tag, target);
}

Engine::VersionRead Engine::resolve_version(const PolicyRef& policy,
                                            std::span<const std::string_view> argv,
                                            std::uint64_t tag,
                                            const std::shared_ptr<upstream::ReplyTarget>& target) {
  // A key that names its version (a writer loading the next one) is read as it is.
  if (named_version(argv[1]) != 0) return VersionRead::passes_through;
  const auto version = policy.runtime().versions().current();
  if (version == 0) {
    target->on_failure(tag, "ERR corral: policy '" + policy.settings().prefix +
                                "' has no current version (pointer '" +
                                policy.settings().versioned->pointer +
                                "' is not set: load a version, then CORRAL.ROLLOVER)");
    return VersionRead::answered;
  }
  use_version(argv, version);
  policy.stats().version_read(version);
  return VersionRead::resolved;
}

void Engine::use_version(std::span<const std::string_view> argv, std::uint64_t version) {
  // The version is part of the cached variant: after a swap no reader finds the old one's values.
  const auto suffix = std::to_string(version);
  variant_ += "@v";
  variant_ += suffix;
  versioned_key_.assign(argv[1]);
  versioned_key_ += ":v";
  versioned_key_ += suffix;
  versioned_argv_.assign(argv.begin(), argv.end());
  versioned_argv_[1] = versioned_key_;
}

bool Engine::serve_key(const PolicyRef& policy, cache::CacheKey key,
                       std::span<const std::string_view> argv, std::uint64_t tag,
                       const std::shared_ptr<upstream::ReplyTarget>& target) {
  const auto now = runtime_.clock().now();
  bool found = runtime_.store().lookup(key, now, entry_);
  if (found && !entry_.meta.empty() && tags_purged(entry_, runtime_.tags())) {
    // CORRAL.INVALIDATE TAG reached this entry: it goes now, on its first read since.
    runtime_.store().erase(key);
    found = false;
  }
  const auto state = found ? entry_.state(now) : cache::EntryState::dead;
  // In a tracking gap the copy goes to plan_miss: revalidated first, and served only if the
  // origin cannot answer (stale-if-error), as when Redis is down altogether.
  if ((state == cache::EntryState::fresh || state == cache::EntryState::stale) &&
      !in_tracking_gap(key.user_key)) {
    policy.stats().lookup(state == cache::EntryState::stale ? LookupOutcome::stale
                          : entry_.negative                 ? LookupOutcome::negative
                                                            : LookupOutcome::hit);
    if (state == cache::EntryState::stale) policy.stats().stale_serve(StaleReason::grace);
    target->on_reply(tag, entry_.value);
    maybe_refresh(policy, key, argv, entry_, state, now);
    return true;
  }
  KeyFetch lead;
  switch (plan_miss(policy, key, argv, found ? &entry_ : nullptr, target, tag, lead)) {
    case MissPlan::answered:
    case MissPlan::waiting:
      return true;
    case MissPlan::uncached:
      // The redis origin is the upstream: the dispatcher forwards it on the client's own
      // connection, in order with the client's other commands.
      if (origin_for(policy) == redis_origin_) return false;
      fetch_uncached(*origin_for(policy), argv, target, tag);
      return true;
    case MissPlan::lead:
      break;
  }
  auto fetch = std::make_shared<Fetch>(executor_, runtime_, random_, origin_for(policy));
  fetch->refresh_again = weak_from_this();
  fetch->leaders.push_back(std::move(lead));
  fetch->start(argv);
  return true;
}

void Engine::maybe_refresh(const PolicyRef& policy, cache::CacheKey key,
                           std::span<const std::string_view> argv, const cache::Entry& entry,
                           cache::EntryState state, cache::TimePoint now) {
  if (state == cache::EntryState::stale) {
    refresh(policy, key, argv, entry.delta, false);
    return;
  }
  const double beta = policy.settings().beta;
  if (entry.negative || beta <= 0) return;
  // Rate-independent timing: grace covering the fetch means no early refresh (the stale path
  // refreshes once at expiry); see core/refresh_timing.hpp.
  if (early_refresh(now, entry, beta, random_ ? *random_ : cache::thread_random()) !=
      EarlyRefresh::none) {
    refresh(policy, key, argv, entry.delta, true);
  }
}

void Engine::refresh(const PolicyRef& policy, cache::CacheKey key,
                     std::span<const std::string_view> argv, cache::Duration previous_delta,
                     bool early) {
  auto& flights = policy.runtime().flights();
  std::string flight_key = cache::encode_cache_key(key);
  if (policy.settings().shared) flight_key += kFleetRefreshFlight;
  // One refresh per key: while one is in flight, the stale value keeps serving.
  if (flights.waiters(flight_key)) {
    policy.stats().stampede_blocked();
    return;
  }
  const auto now = runtime_.clock().now();
  if (!policy.runtime().backoff().allowed(flight_key, now)) return;
  const auto ticket = flights.join(flight_key, policy.settings().max_waiters, [&] {
    return std::make_shared<Flight>(runtime_.store().fill_ticket(key.user_key));
  });
  if (ticket.role != FlightRole::leader) {
    if (ticket.role == FlightRole::follower) flights.leave(flight_key, ticket.flight);
    policy.stats().stampede_blocked();
    return;
  }
  KeyFetch lead = make_lead(policy, key, std::move(flight_key), ticket.flight, previous_delta);
  lead.background = true;
  lead.early = early;
  auto fetch = std::make_shared<Fetch>(executor_, runtime_, random_, origin_for(policy));
  fetch->refresh_again = weak_from_this();
  fetch->leaders.push_back(std::move(lead));
  fetch->start(argv);
}

Engine::MissPlan Engine::plan_miss(const PolicyRef& policy, cache::CacheKey key,
                                   std::span<const std::string_view> argv, const cache::Entry* copy,
                                   const std::shared_ptr<upstream::ReplyTarget>& target,
                                   std::uint64_t tag, KeyFetch& lead) {
  const auto& settings = policy.settings();
  auto& flights = policy.runtime().flights();
  auto& stats = policy.stats();
  const auto now = runtime_.clock().now();
  std::string flight_key = cache::encode_cache_key(key);
  const bool usable = copy && !copy->negative && now < serve_on_error_until(*copy);
  // Backing off after failures: a key with a stale-if-error copy serves it without asking the
  // origin. Without one it is fetched anyway (coalesced, and the breaker still guards the
  // origin): failing a client whose key might be fine would be worse.
  if (usable && !policy.runtime().backoff().allowed(flight_key, now)) {
    stats.lookup(LookupOutcome::stale);
    stats.stale_serve(StaleReason::stale_if_error);
    target->on_reply(tag, copy->value);
    return MissPlan::answered;
  }
  std::optional<std::string> stale;
  if (usable) stale = copy->value;
  const auto ticket = flights.join(flight_key, settings.max_waiters, [&] {
    return std::make_shared<Flight>(runtime_.store().fill_ticket(key.user_key));
  });
  if (ticket.role == FlightRole::overflow) {
    stats.lookup(LookupOutcome::miss);
    stats.waiter_overflowed();
    if (overflow_action(settings.on_overflow, stale.has_value()) == OverflowAction::passthrough) {
      return MissPlan::uncached;
    }
    answer_without_fetch(this, WaiterSettings(policy, origin_for(policy)), stale, argv,
                         overflow_reason(policy), target, tag);
    return MissPlan::answered;
  }
  if (ticket.role == FlightRole::follower && settings.origin == config::OriginKind::redis &&
      !runtime_.store().ticket_valid(key.user_key, ticket.flight->ticket)) {
    // The key was written since that fetch began: its value may predate the write. (Other
    // origins are not written through Redis: their in-flight answer is as new as another, and
    // a fleet refresh's answer is the very write that invalidated the key.)
    flights.leave(flight_key, ticket.flight);
    stats.lookup(LookupOutcome::miss);
    return MissPlan::uncached;
  }
  const bool leader = ticket.role == FlightRole::leader;
  stats.lookup(leader ? LookupOutcome::miss : LookupOutcome::coalesced);
  if (!leader) stats.stampede_blocked();
  const auto waiter = std::make_shared<Waiter>(
      shared_from_this(), WaiterSettings(policy, origin_for(policy)), target, tag);
  if (leader) {
    lead =
        make_lead(policy, key, flight_key, ticket.flight, copy ? copy->delta : cache::Duration{});
    waiter->wait(ticket.flight, std::nullopt, std::move(stale), argv);
    return MissPlan::lead;
  }
  waiter->wait(ticket.flight, std::move(flight_key), std::move(stale), argv);
  return MissPlan::waiting;
}

std::shared_ptr<upstream::ReplyTarget> Engine::wrap_write(
    std::span<const std::string_view> argv, std::span<const std::size_t> key_indices,
    const std::shared_ptr<upstream::ReplyTarget>& target) {
  const PolicySet& set = snapshot();
  if (set.settings.empty() && !hot_reads_) return target;
  std::vector<std::string> keys;
  std::size_t policy_keys = 0;
  for (const auto i : key_indices) {
    if (i >= argv.size()) continue;
    const auto index = set.match(argv[i]);
    if (!index && hot_reads_) {
      // Any key, hot now or not: one that turns hot while the write is in flight must not be
      // read on the fill connection, which could overtake the write.
      keys.emplace_back(argv[i]);
      hot_reads_->write_sent(argv[i]);
      runtime_.hot()->invalidate(argv[i]);
      continue;
    }
    if (index) {
      keys.emplace_back(argv[i]);
      std::swap(keys.back(), keys[policy_keys++]);
      // Writing `feat:U1:v3` changes what `feat:U1` reads while version 3 is current.
      const auto reader_key = unversioned_key(argv[i]);
      if (set.settings[*index].versioned && reader_key.size() != argv[i].size()) {
        keys.emplace_back(reader_key);
        std::swap(keys.back(), keys[policy_keys++]);
      }
      set.stats[*index]->invalidation(InvalidationSource::write);
    }
  }
  if (keys.empty()) return target;
  // Dropped now as well as on the reply: from the moment the write leaves, no thread serves the
  // value it overwrites, and reads of these keys on this thread bypass the cache until Redis
  // answers (they travel behind the write on the client's connection).
  for (std::size_t k = 0; k < policy_keys; ++k) {
    runtime_.store().invalidate(keys[k]);
    ++pending_writes_[keys[k]];
  }
  return std::make_shared<InvalidatingTarget>(weak_from_this(), runtime_, target, std::move(keys));
}

void Engine::refresh_invalidated(std::string_view key) {
  const PolicySet& set = snapshot();
  const auto index = set.match(key);
  if (!index || set.settings[*index].on_invalidate != config::OnInvalidate::refresh) return;
  const std::string_view argv[] = {"GET", key};
  const PolicyRef& policy = policy_refs_[*index];
  if (!policy.settings().versioned) {
    refresh(policy, cache::CacheKey{key, "GET"}, argv, cache::Duration{}, false);
    return;
  }
  const auto version = policy.runtime().versions().current();
  if (version == 0 || named_version(key) != 0) return;
  variant_ = "GET";
  use_version(argv, version);
  refresh(policy, cache::CacheKey{key, variant_}, versioned_argv_, cache::Duration{}, false);
}

void Engine::refresh_shared_copy(std::string_view key, cache::Duration delta) {
  const PolicySet& set = snapshot();
  const auto index = set.match(key);
  if (!index || !set.settings[*index].shared) return;
  const std::string_view argv[] = {"GET", key};
  const auto now = runtime_.clock().now();
  const cache::CacheKey cache_key{key, "GET"};
  const auto entry = runtime_.store().peek(cache_key, now);
  if (entry && entry->state(now) == cache::EntryState::fresh) return;  // refreshed meanwhile
  refresh(policy_refs_[*index], cache_key, argv, entry ? entry->delta : delta, false);
}

void Engine::flush_all() {
  runtime_.store().clear();
  if (auto* hot = runtime_.hot()) hot->flush();
  runtime_.count_invalidation_all(InvalidationSource::flush);
}

namespace {
// A fleet's shared copy, its lock and the tag purge counters steer every Corral of the fleet: a
// value written there by a client would be served by all of them, a lock would stall refreshes.
std::optional<std::string> refused_bookkeeping_write(const PolicySet& set, std::string_view key) {
  const auto owner = companion_owner(key);
  const auto index = owner ? set.match(*owner) : std::nullopt;
  const bool fleet_copy = index && set.settings[*index].shared;
  if (!fleet_copy && !key.starts_with(kTagKeyPrefix)) return std::nullopt;
  return "ERR corral: writes to '" + std::string(key) + "' are refused: it is Corral's own " +
         (fleet_copy ? "fleet bookkeeping of policy '" + set.settings[*index].prefix + "'"
                     : std::string("tag purge counter (use CORRAL.INVALIDATE TAG)"));
}
}  // namespace

std::optional<std::string> Engine::refused_write(std::span<const std::string_view> argv,
                                                 std::span<const std::size_t> key_indices) {
  const PolicySet& set = snapshot();
  if (set.settings.empty()) return std::nullopt;
  for (const auto i : key_indices) {
    if (i >= argv.size()) continue;
    if (auto refusal = refused_bookkeeping_write(set, argv[i])) return refusal;
    const auto index = set.match(argv[i]);
    if (!index || set.settings[*index].writes != config::WritePolicy::refuse) continue;
    const auto& policy = set.settings[*index];
    return "ERR corral: writes to '" + std::string(argv[i]) + "' are refused: policy '" +
           policy.prefix + "' reads from its origin, the source of truth (DEL drops the cached " +
           "value; set writes: passthrough to allow writes to Redis)";
  }
  return std::nullopt;
}

// MGET through the cache: answered key by key from the store; the missing keys of redis-origin
// policies fetched together in one upstream MGET (and cached as GETs), those of other origins
// (http, fleet, versioned) read one by one through their own origin.
bool Engine::handle_mget(std::span<const std::string_view> argv, std::uint64_t tag,
                         const std::shared_ptr<upstream::ReplyTarget>& target) {
  const PolicySet& set = *snapshot_;
  const std::size_t count = argv.size() - 1;
  if (count == 0) return false;
  mget_parts_.assign(count, {});
  bool any_cached = false;
  for (std::size_t i = 0; i < count; ++i) {
    const auto index = set.match(argv[i + 1]);
    if (!index || !mask_has(set.command_masks[*index], CachedCommand::mget)) continue;
    // A versioned key naming its own version is read as it is, uncached.
    if (set.settings[*index].versioned && named_version(argv[i + 1]) != 0) continue;
    if (write_pending(argv[i + 1])) return false;
    mget_parts_[i].policy = static_cast<int>(*index);
    any_cached = true;
  }
  if (!any_cached) return false;

  const auto now = runtime_.clock().now();
  mget_values_.clear();
  bool complete = true;
  for (std::size_t i = 0; i < count; ++i) {
    auto& part = mget_parts_[i];
    if (part.policy < 0) {
      complete = false;
      continue;
    }
    const PolicyRef& policy = policy_refs_[static_cast<std::size_t>(part.policy)];
    if (origin_for(policy) != redis_origin_) {
      complete = false;  // served key by key below
      continue;
    }
    const cache::CacheKey key{argv[i + 1], command_name(CachedCommand::get)};
    const bool found = runtime_.store().lookup(key, now, entry_);
    const auto state = found ? entry_.state(now) : cache::EntryState::dead;
    if ((state != cache::EntryState::fresh && state != cache::EntryState::stale) ||
        in_tracking_gap(key.user_key)) {
      complete = false;
      continue;
    }
    policy.stats().lookup(state == cache::EntryState::stale ? LookupOutcome::stale
                          : entry_.negative                 ? LookupOutcome::negative
                                                            : LookupOutcome::hit);
    if (state == cache::EntryState::stale) policy.stats().stale_serve(StaleReason::grace);
    part = {part.policy, mget_values_.size(), entry_.value.size(), true};
    mget_values_.append(entry_.value);
    const std::string_view get_argv[] = {command_name(CachedCommand::get), key.user_key};
    maybe_refresh(policy, key, get_argv, entry_, state, now);
  }
  if (complete) {
    mget_reply_.clear();
    resp::append_array_header(mget_reply_, count);
    mget_reply_.append(mget_values_);
    target->on_reply(tag, mget_reply_);
    return true;
  }

  // Some keys are missing: their parts come from flights (coalesced with GETs of the same keys
  // from any thread) and from one MGET of every key this request leads or does not cache.
  auto assembly = std::make_shared<MgetAssembly>(target, tag, count);
  auto fetch = std::make_shared<Fetch>(executor_, runtime_, random_, redis_origin_);
  for (std::size_t i = 0; i < count; ++i) {
    const auto& part = mget_parts_[i];
    const std::string_view user_key = argv[i + 1];
    if (part.hit) {
      assembly->set_part(i, std::string_view(mget_values_).substr(part.offset, part.size));
      continue;
    }
    if (part.policy < 0) {
      fetch->elements.push_back({-1, std::string(user_key), assembly, i});
      continue;
    }
    const PolicyRef& policy = policy_refs_[static_cast<std::size_t>(part.policy)];
    if (origin_for(policy) != redis_origin_) {
      serve_mget_part(policy, user_key, i, assembly);
      continue;
    }
    const cache::CacheKey key{user_key, command_name(CachedCommand::get)};
    const std::string_view get_argv[] = {key.variant, user_key};
    const auto copy = runtime_.store().peek(key, now);
    // A live copy reaches here only in a tracking gap: it is revalidated like the others.
    const bool usable = copy && copy->state(now) != cache::EntryState::dead;
    KeyFetch lead;
    switch (plan_miss(policy, key, get_argv, usable ? &*copy : nullptr, assembly, i, lead)) {
      case MissPlan::answered:
      case MissPlan::waiting:
        break;
      case MissPlan::uncached:
        fetch->elements.push_back({-1, std::string(user_key), assembly, i});
        break;
      case MissPlan::lead:
        fetch->elements.push_back(
            {static_cast<int>(fetch->leaders.size()), std::string(user_key), nullptr, i});
        fetch->leaders.push_back(std::move(lead));
        break;
    }
  }
  if (!fetch->elements.empty()) fetch->start({});
  return true;
}

void Engine::serve_mget_part(const PolicyRef& policy, std::string_view user_key, std::size_t part,
                             const std::shared_ptr<MgetAssembly>& assembly) {
  variant_ = command_name(CachedCommand::get);
  const std::string_view get_argv[] = {command_name(CachedCommand::get), user_key};
  std::span<const std::string_view> argv = get_argv;
  if (policy.settings().versioned) {
    if (resolve_version(policy, get_argv, part, assembly) != VersionRead::resolved) return;
    argv = versioned_argv_;
  }
  serve_key(policy, {user_key, variant_}, argv, part, assembly);
}

}  // namespace corral::stampede
