// Fleet mode's read, lock, fetch, fenced write and wait-for-the-holder steps for one key, as one
// coroutine per fetch.
#include "stampede/fleet/fleet_origin.hpp"

#include <utility>

#include <algorithm>
#include <charconv>
#include <map>
#include <random>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "cache/random.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "resp/reply_constants.hpp"
#include "stampede/core/ewma.hpp"
#include "stampede/core/jitter.hpp"
#include "stampede/core/response_lifetime.hpp"
#include "stampede/core/tag_epochs.hpp"
#include "stampede/fleet/fleet_scripts.hpp"
#include "stampede/fleet/fleet_wakeups.hpp"
#include "stampede/policy/policy_stats.hpp"
#include "upstream/async_event.hpp"
#include "upstream/call.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/keyed_call.hpp"
#include "upstream/keyed_caller.hpp"
#include "upstream/reply_target.hpp"

namespace corral::stampede {

namespace asio = boost::asio;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kMinLockTtl{1000};
// Waiting for another process's refresh: the winner's write wakes us through its tracking
// invalidation, so the shared copy is read again only every 2 * delta, within these, in case
// the holder gave up or died (its lock key is not tracked) or a push was lost. Without tracking
// the old pace applies: every delta / 8, within kBlindPoll*.
constexpr milliseconds kPollMin{100};
constexpr milliseconds kPollMax{1000};
constexpr milliseconds kBlindPollMin{5};
constexpr milliseconds kBlindPollMax{50};
// lock()'s freshness checks.
constexpr milliseconds kAnyFresh{0};
constexpr milliseconds kNoCheck{-1};

std::string random_token_prefix() {
  std::random_device device;
  std::uniform_int_distribution<std::uint64_t> digits;
  return fmt::format("{:016x}{:016x}:", digits(device), digits(device));
}

}  // namespace

struct FleetOrigin::Shared {
  asio::any_io_executor executor;
  std::shared_ptr<upstream::KeyedCaller> caller;  // to the node holding the key's slot
  config::PolicySettings policy;
  std::shared_ptr<PolicyStats> stats;
  const cache::Clock& clock;
  FleetWakeups& wakeups;
  TagEpochs* tags;  // null: tags are not kept with shared copies
  std::string token_prefix = random_token_prefix();
  std::uint64_t tokens = 0;

  // Long enough for the slowest fetch the policy allows, and several recompute times.
  milliseconds lock_ttl(milliseconds delta) const {
    if (policy.lock_ttl.count() > 0) return policy.lock_ttl;
    const auto attempts = policy.origin == config::OriginKind::http ? policy.http.retries + 1 : 1;
    const auto slowest = policy.http.timeout * attempts + policy.fetch_delay;
    return std::max({kMinLockTtl, slowest + milliseconds(500), 4 * delta});
  }
};

namespace {

using SharedPtr = std::shared_ptr<FleetOrigin::Shared>;
using asio::awaitable;
enum class Mode { miss, stale, early };

// A FetchResult that owns its reply, so it can be co_returned.
struct Answer {
  origin::Outcome outcome = origin::Outcome::failure;
  std::string reply;
  std::chrono::nanoseconds duration{0};
  std::optional<origin::SharedLifetime> lifetime;
  std::optional<origin::ResponseCaching> caching;  // what an http origin's headers said
};

// One fetch or refresh of one key, as one coroutine; the coroutine owns it.
class FleetFetch : public std::enable_shared_from_this<FleetFetch> {
 public:
  FleetFetch(SharedPtr shared, std::shared_ptr<origin::Origin> inner,
             std::span<const std::string_view> argv, Mode mode, origin::FetchCallback done)
      : shared_(std::move(shared)),
        inner_(std::move(inner)),
        argv_(argv.begin(), argv.end()),
        keys_(argv.size() > 1 ? argv[1] : std::string_view()),
        mode_(mode),
        done_(std::move(done)),
        started_(shared_->clock.now()) {}

  void start() {
    asio::co_spawn(
        shared_->executor,
        [self = shared_from_this()]() -> awaitable<void> {
          const Answer answer = co_await self->fetch_or_refresh();
          const auto done = std::move(self->done_);
          if (!done) co_return;
          origin::FetchResult result{answer.outcome, answer.reply, answer.duration, answer.lifetime,
                                     self->lock_wait_};
          result.caching = answer.caching;
          done(result);
        },
        asio::detached);
  }

 private:
  awaitable<Answer> fetch_or_refresh() {
    auto fresher_than = kAnyFresh;
    if (mode_ == Mode::miss) {
      const auto state = co_await read();
      if (!state) co_return fail(read_error_);
      if (state->fresh() || in_grace(*state)) {
        const bool purged = co_await tag_purged(*state);
        // A purged copy is refetched even though it looks fresh: no freshness check.
        if (!purged) co_return answer(*state, false);
        fresher_than = kNoCheck;
      }
    } else if (mode_ == Mode::early) {
      // XFetch refreshes within the last half of a TTL at most: more left means refreshed.
      fresher_than = shared_->policy.ttl / 2;
    }
    co_return co_await lock_and_refresh(fresher_than);
  }

  // `fresher_than`: no lock if the shared copy has more freshness left (negative: no check).
  awaitable<Answer> lock_and_refresh(milliseconds fresher_than) {
    for (;;) {
      const auto locked = co_await lock(fresher_than);
      if (!locked.ok()) co_return fail(locked.error);
      if (locked.reply.empty() || locked.reply.front() != ':') {
        co_return fail("ERR corral: fleet lock refused");
      }
      if (locked.reply == resp::kReplyOne) co_return co_await fetch_and_write();
      if (locked.reply == ":2\r\n") {  // refreshed by another process since our copy went stale
        const auto state = co_await read();
        if (!state) co_return fail(read_error_);
        bool purged = false;
        if (state->has_value) purged = co_await tag_purged(*state);
        if (state->has_value && !purged) co_return answer(*state, false);
        fresher_than = kNoCheck;
        continue;
      }
      shared_->stats->lock_contended();
      if (deadline_ == cache::TimePoint{}) deadline_ = shared_->clock.now() + 2 * lock_ttl_;
      if (mode_ == Mode::early && seen_stored_ms_ < 0) {
        // An early refresh happens while the shared copy is fresh: wait for a newer one.
        const auto state = co_await read();
        if (!state) co_return fail(read_error_);
        seen_stored_ms_ = state->stored_ms;
      }
      const auto waiting_since = shared_->clock.now();  // the slowlog's lock_wait: this path only
      auto answered = co_await wait_for_holder();
      lock_wait_ += shared_->clock.now() - waiting_since;
      if (answered) co_return std::move(*answered);
      fresher_than = kAnyFresh;  // the holder is gone without writing: take over
    }
  }

  // The holder writes, gives up (its lock goes), or dies (its lock expires): wait for one.
  // nullopt: the lock is free and the refresh is ours to make.
  awaitable<std::optional<Answer>> wait_for_holder() {
    asio::steady_timer timer(shared_->executor);
    // Registered before the first read: a write that read does not see yet sends its
    // invalidation after it, so the wake-up cannot be missed.
    const WakeScope scope(*this, timer);
    for (;;) {
      const auto state = co_await read();
      if (!state) co_return fail(read_error_);
      if (state->fresh() && state->stored_ms != seen_stored_ms_) co_return answer(*state, false);
      if (state->lock_for.count() <= 0) {
        // An early refresh was optional: keep the copy.
        if (mode_ == Mode::early && state->fresh()) co_return answer(*state, false);
        co_return std::nullopt;
      }
      if (shared_->clock.now() >= deadline_) {
        co_return fail("ERR corral: fleet refresh of '" + keys_.plain +
                       "' is held by another process (lock not released)");
      }
      if (!woken_) {
        timer.expires_after(poll_interval());
        boost::system::error_code ignored;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      }
      woken_ = false;
    }
  }

  milliseconds poll_interval() const {
    const auto delta = duration_cast<milliseconds>(delta_);
    if (!shared_->wakeups.live()) return std::clamp(delta / 8, kBlindPollMin, kBlindPollMax);
    return std::clamp(2 * delta, kPollMin, kPollMax);
  }

  // While wait_for_holder runs: the key's tracking invalidation cancels its timer (or, arriving
  // during a read, makes it read again at once). The wake is posted to this fetch's executor,
  // where the coroutine runs, and finds it through a weak pointer: it may come after the end.
  class WakeScope {
   public:
    WakeScope(FleetFetch& fetch, asio::steady_timer& timer)
        : fetch_(fetch),
          watch_(fetch.shared_->wakeups, fetch.keys_.plain,
                 [weak = fetch.weak_from_this(), executor = fetch.shared_->executor] {
                   asio::post(executor, [weak] {
                     if (const auto self = weak.lock()) self->wake();
                   });
                 }) {
      fetch_.woken_ = false;
      fetch_.wake_timer_ = &timer;
    }
    ~WakeScope() { fetch_.wake_timer_ = nullptr; }
    WakeScope(const WakeScope&) = delete;
    WakeScope& operator=(const WakeScope&) = delete;

   private:
    FleetFetch& fetch_;
    FleetWakeups::Watch watch_;
  };

  void wake() {
    if (!wake_timer_) return;
    woken_ = true;
    wake_timer_->cancel();
  }

  // We hold the lock: ask the origin, then write what it said.
  awaitable<Answer> fetch_and_write() {
    shared_->stats->lock_acquired();
    const auto inner = inner_.lock();
    if (!inner) {
      release();
      co_return fail("ERR corral: the policy's origin was replaced by a reload");
    }
    // The shadow's validators, whichever process stored them: a 304 renews the shared copy.
    if (!last_state_) {
      const auto state = co_await read();
      if (!state) {
        release();
        co_return fail(read_error_);
      }
    }
    const bool conditional = last_state_->has_value && !last_state_->nil && !last_state_->deleted &&
                             !last_state_->validators.empty();
    // Named, not temporaries: g++ 12 miscompiles temporaries inside co_await operands.
    const std::string validators = conditional ? last_state_->validators : std::string();
    if (shared_->tags) tag_generation_ = shared_->tags->generation();
    Answer fetched = co_await fetch_from(*inner, validators);
    origin_duration_ = fetched.duration;
    if (fetched.outcome == origin::Outcome::failure ||
        fetched.outcome == origin::Outcome::error_reply) {
      release();
      co_return Answer{fetched.outcome, fetched.reply, elapsed(), std::nullopt, std::nullopt};
    }
    const bool nil = fetched.outcome == origin::Outcome::nil;
    auto& caching = fetched.caching;
    if (caching && caching->not_modified && caching->tags.empty()) {
      // A 304 may leave out the tags: the copy it renews keeps its own.
      for (const auto& tag : last_state_->tags) caching->tags.push_back(tag.tag);
    }
    if (conditional) {
      const bool same = caching && caching->not_modified;
      shared_->stats->revalidation(same ? RevalidationResult::not_modified
                                        : RevalidationResult::modified);
    }
    if (caching && caching->not_modified) {
      // Answered here: the engine above gets the renewed value like any other.
      caching->not_modified = false;
      std::string renewed = last_state_->value;
      Answer written = co_await write(std::move(renewed), false, std::move(caching));
      co_return written;
    }
    if (caching && !caching->store) {
      // no-store / private: answered, never written (the engine keeps no local copy either).
      release();
      auto answer = value_answer(text_of(fetched.reply), nil,
                                 {milliseconds(0), milliseconds(0),
                                  duration_cast<milliseconds>(delta_), true, std::nullopt});
      answer.caching = std::move(caching);
      co_return answer;
    }
    std::string value;
    if (!nil) {
      const auto decoded = resp::decode_reply(fetched.reply);
      if (!decoded || decoded->type != resp::Reply::Type::bulk) {
        release();
        co_return fail("ERR corral: fleet mode caches string values only");
      }
      value = decoded->text;
    }
    Answer written = co_await write(std::move(value), nil, std::move(caching));
    co_return written;
  }

  // The bytes of a bulk reply (what the shared copy stores), or the reply itself.
  static std::string text_of(std::string_view reply) {
    const auto decoded = resp::decode_reply(reply);
    if (decoded && decoded->type == resp::Reply::Type::bulk) return decoded->text;
    return std::string(reply);
  }

  awaitable<Answer> fetch_from(origin::Origin& inner, const std::string& validators) {
    // Shared with the callback: an origin may call back late, or never (shutdown).
    struct Pending {
      explicit Pending(const asio::any_io_executor& executor) : answered(executor) {}
      upstream::AsyncEvent answered;
      Answer fetched;
    };
    const auto pending = std::make_shared<Pending>(shared_->executor);
    const auto argv = view();
    auto answered = [pending](const origin::FetchResult& result) {
      pending->fetched = {result.outcome, std::string(result.reply), result.duration,
                          result.lifetime, result.caching};
      pending->answered.notify();
    };
    if (validators.empty()) {
      inner.fetch(argv, std::move(answered));
    } else {
      inner.revalidate(argv, origin::FetchReason::miss, validators, std::move(answered));
    }
    co_await pending->answered.wait();
    co_return std::move(pending->fetched);
  }

  // The fenced write of value + shadow + metadata; answers with what the client should get.
  // The shared copy takes the response's freshness, grace and stale-if-error (Cache-Control /
  // Expires) and validators; its windows are recorded so every process serves it alike.
  awaitable<Answer> write(std::string value, bool nil,
                          std::optional<origin::ResponseCaching> caching) {
    const auto& p = shared_->policy;
    auto lifetime = entry_lifetime(p, nil, cache::thread_random());
    if (caching) {
      lifetime = response_lifetime(lifetime, *caching, nil, 0, cache::Duration::zero()).lifetime;
    }
    const fleet::CopyWindows own{
        nil ? milliseconds(0) : duration_cast<milliseconds>(lifetime.grace),
        duration_cast<milliseconds>(lifetime.stale_if_error)};
    const std::string validators = caching ? caching->validators : std::string();
    std::string tags;
    if (caching && !caching->tags.empty() && shared_->tags) {
      if (shared_->tags->purged_after(caching->tags, tag_generation_)) {
        // Purged while the origin answered: the answer may predate the purge; not written.
        release();
        const origin::SharedLifetime unstored{milliseconds(0), milliseconds(0), smoothed_delta(),
                                              true, std::nullopt};
        auto answer = value_answer(value, nil, unstored);
        answer.caching = std::move(caching);
        co_return answer;
      }
      const auto counts = co_await tag_counts(caching->tags);
      std::vector<fleet::TagCount> recorded;
      for (std::size_t i = 0; i < counts.size(); ++i)
        recorded.push_back({caching->tags[i], counts[i]});
      tags = fleet::encode_tags(recorded);
    }
    const auto fresh = std::max(milliseconds(1), duration_cast<milliseconds>(lifetime.ttl));
    const auto keep = nil ? fresh : fresh + std::max(own.grace, own.stale_if_error);
    const auto delta = duration_cast<milliseconds>(
        ewma(delta_, origin_duration_ + std::chrono::nanoseconds(p.fetch_delay)));
    const std::string fresh_ms = std::to_string(fresh.count());
    const std::string keep_ms = std::to_string(keep.count());
    const std::string delta_ms = std::to_string(delta.count());
    const std::string windows_text = fleet::encode_windows(own);
    const std::string_view args[] = {token_,          value,      fresh_ms, keep_ms,     delta_ms,
                                     nil ? "1" : "0", validators, tags,     windows_text};
    const auto key_list = keys();
    const auto written =
        co_await upstream::call(*shared_->caller, fleet::write_script(), key_list, args);
    const origin::SharedLifetime stored{fresh, std::min(keep, fresh + own.grace), delta, true,
                                        own.stale_if_error};
    if (written.ok() && written.reply == resp::kReplyOne) {
      auto answer = value_answer(value, nil, stored);
      answer.caching = std::move(caching);  // its tags: the local copy is purged with them
      co_return answer;
    }
    if (!written.ok() || written.reply != resp::kReplyZero) {
      // Redis refused or lost the write (OOM, READONLY ...): what we fetched is still the
      // origin's answer. The lock goes, so others need not wait for it to expire.
      const std::string_view why = written.ok() ? written.reply : written.error;
      spdlog::warn("fleet: refresh of '{}' was not stored in Redis: {}", keys_.plain,
                   why.substr(0, why.find('\r')));
      release();
      co_return value_answer(value, nil, stored);
    }
    // Fenced: our lock expired during the fetch and a successor may have written since.
    shared_->stats->write_fenced();
    spdlog::warn("fleet: refresh of '{}' took longer than its lock; its write was refused",
                 keys_.plain);
    const auto state = co_await read();
    if (!state) co_return fail(read_error_);
    if (state->fresh()) co_return answer(*state, true);
    co_return value_answer(value, nil, stored);
  }

  // The shared copy's state; nullopt (and read_error_ set) when Redis gave none.
  awaitable<std::optional<fleet::SharedState>> read() {
    const auto key_list = keys();
    const auto reply = co_await upstream::call(*shared_->caller, fleet::read_script(), key_list,
                                               std::span<const std::string_view>());
    const auto state = reply.ok() ? fleet::parse_state(reply.reply) : std::nullopt;
    if (!state) {
      read_error_ = reply.ok() ? "ERR corral: unexpected fleet state" : reply.error;
      co_return std::nullopt;
    }
    if (state->delta.count() > 0) delta_ = state->delta;
    last_state_ = state;
    co_return state;
  }

  // Whether a tag of the shared copy was purged since it was written: its recorded count is
  // below the tag key's current one.
  awaitable<bool> tag_purged(const fleet::SharedState& state) {
    if (!shared_->tags || state.tags.empty()) co_return false;
    std::vector<std::string> names;
    for (const auto& tag : state.tags) names.push_back(tag.tag);
    const auto counts = co_await tag_counts(names);
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] > state.tags[i].count) co_return true;
    }
    co_return false;
  }

  // The current purge counts of `tags`: as this process knows them (kept current by the
  // tracking invalidation every purge's INCR produces), else read from Redis once and kept.
  awaitable<std::vector<std::uint64_t>> tag_counts(const std::vector<std::string>& tags) {
    std::vector<std::uint64_t> counts(tags.size(), 0);
    std::vector<std::size_t> unknown;
    for (std::size_t i = 0; i < tags.size(); ++i) {
      if (const auto known = shared_->tags->known_count(tags[i])) {
        counts[i] = *known;
      } else {
        unknown.push_back(i);
      }
    }
    if (unknown.empty()) co_return counts;
    const auto since = shared_->tags->generation();
    // Tag keys hash to any slot: one MGET per slot among them (one in all without a cluster).
    std::map<unsigned, std::vector<std::size_t>> by_slot;
    std::vector<std::string> keys;
    for (const auto i : unknown) {
      keys.push_back(tag_key(tags[i]));
      by_slot[upstream::key_slot(keys.back())].push_back(keys.size() - 1);
    }
    for (const auto& [slot, members] : by_slot) {
      std::vector<std::string_view> mget{"MGET"};
      for (const auto j : members) mget.push_back(keys[j]);
      const auto reply = co_await upstream::call(*shared_->caller, keys[members.front()], mget);
      const auto decoded = reply.ok() ? resp::decode_reply(reply.reply) : std::nullopt;
      if (!decoded || decoded->type != resp::Reply::Type::array ||
          decoded->elements.size() != members.size()) {
        continue;  // unknown counts read as 0: a copy is not refused for Redis's failure
      }
      for (std::size_t m = 0; m < members.size(); ++m) {
        const auto& element = decoded->elements[m];
        std::uint64_t count = 0;
        if (element.type == resp::Reply::Type::bulk) {
          std::from_chars(element.text.data(), element.text.data() + element.text.size(), count);
        }
        const auto i = unknown[members[m]];
        counts[i] = count;
        shared_->tags->remember_count(tags[i], count, since);
      }
    }
    co_return counts;
  }

  awaitable<upstream::CallResult> lock(milliseconds fresher_than) {
    token_ = shared_->token_prefix + std::to_string(++shared_->tokens);
    lock_ttl_ = shared_->lock_ttl(duration_cast<milliseconds>(delta_));
    const std::string ttl = std::to_string(lock_ttl_.count());
    const std::string min_left = std::to_string(fresher_than.count());
    const std::string_view args[] = {token_, ttl, min_left};
    const auto key_list = keys();
    co_return co_await upstream::call(*shared_->caller, fleet::lock_script(), key_list, args);
  }

  // Not awaited: the answer does not depend on it, and a lost release only makes others wait
  // for the lock's expiry.
  void release() {
    const std::string_view lock_key[] = {keys_.lock};
    const std::string_view args[] = {token_};
    auto target = upstream::CallbackTarget::make([](std::string_view, bool) {});
    upstream::run(*shared_->caller, fleet::release_script(), lock_key, args, target, 0);
  }

  std::vector<std::string_view> keys() const { return {keys_.plain, keys_.shadow, keys_.lock}; }

  bool in_grace(const fleet::SharedState& state) const { return usable_for(state).count() > 0; }

  fleet::CopyWindows windows(const fleet::SharedState& state) const {
    const auto& p = shared_->policy;
    return fleet::copy_windows(state, {p.grace, p.stale_if_error});
  }
  milliseconds usable_for(const fleet::SharedState& state) const {
    return fleet::usable_for(state, windows(state));
  }

  Answer answer(const fleet::SharedState& state, bool fetched) {
    delta_ = state.delta;
    origin::SharedLifetime lifetime{state.fresh_for, usable_for(state), state.delta, fetched,
                                    windows(state).stale_if_error};
    auto out = value_answer(state.value, state.nil, lifetime);
    if (!state.tags.empty()) {
      // The local copy carries the tags too, so a purge drops it from this process's memory.
      out.caching.emplace();
      for (const auto& tag : state.tags) out.caching->tags.push_back(tag.tag);
    }
    return out;
  }

  milliseconds smoothed_delta() const { return duration_cast<milliseconds>(delta_); }

  Answer value_answer(std::string_view value, bool nil, const origin::SharedLifetime& lifetime) {
    std::string reply;
    if (nil) {
      reply = "$-1\r\n";
    } else {
      resp::append_bulk(reply, value);
    }
    return {nil ? origin::Outcome::nil : origin::Outcome::value, std::move(reply), elapsed(),
            lifetime, std::nullopt};
  }

  Answer fail(std::string_view error) {
    return {origin::Outcome::failure, std::string(error), elapsed(), std::nullopt, std::nullopt};
  }

  std::chrono::nanoseconds elapsed() const {
    return origin_duration_.count() > 0 ? origin_duration_ : shared_->clock.now() - started_;
  }
  std::vector<std::string_view> view() const { return {argv_.begin(), argv_.end()}; }

  SharedPtr shared_;
  // Weak: the origin holds its pending callbacks, which hold this fetch.
  std::weak_ptr<origin::Origin> inner_;
  std::vector<std::string> argv_;
  fleet::FleetKeys keys_;
  Mode mode_;
  origin::FetchCallback done_;
  cache::TimePoint started_;
  cache::TimePoint deadline_{};
  std::string token_;
  milliseconds lock_ttl_{0};
  cache::Duration delta_{};
  std::chrono::nanoseconds origin_duration_{0}, lock_wait_{0};  // lock_wait_: in wait_for_holder
  std::int64_t seen_stored_ms_ = -1;
  std::string read_error_;
  asio::steady_timer* wake_timer_ = nullptr;  // set while wait_for_holder runs
  bool woken_ = false;
  std::optional<fleet::SharedState> last_state_;  // the shared copy as last read
  std::uint64_t tag_generation_ = 0;  // TagEpochs::generation() before asking the origin
};

}  // namespace

FleetOrigin::FleetOrigin(const asio::any_io_executor& executor,
                         std::shared_ptr<origin::Origin> inner,
                         std::shared_ptr<upstream::KeyedCaller> caller,
                         const config::PolicySettings& policy, std::shared_ptr<PolicyStats> stats,
                         const cache::Clock& clock, FleetWakeups& wakeups, TagEpochs* tags)
    : inner_(std::move(inner)),
      shared_(std::make_shared<Shared>(
          Shared{executor, std::move(caller), policy, std::move(stats), clock, wakeups, tags})) {}

FleetOrigin::~FleetOrigin() = default;

void FleetOrigin::fetch(std::span<const std::string_view> argv, origin::FetchCallback done) {
  std::make_shared<FleetFetch>(shared_, inner_, argv, Mode::miss, std::move(done))->start();
}

void FleetOrigin::refresh(std::span<const std::string_view> argv, origin::FetchReason reason,
                          origin::FetchCallback done) {
  const auto mode = reason == origin::FetchReason::early ? Mode::early : Mode::stale;
  std::make_shared<FleetFetch>(shared_, inner_, argv, mode, std::move(done))->start();
}

}  // namespace corral::stampede
