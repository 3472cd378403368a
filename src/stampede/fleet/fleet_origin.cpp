// Fleet mode's read, lock, fetch, fenced write and wait-for-the-holder steps for one key, as one
// coroutine per fetch.
#include "stampede/fleet/fleet_origin.hpp"

#include <utility>

#include <algorithm>
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
#include "stampede/fleet/fleet_scripts.hpp"
#include "stampede/fleet/fleet_wakeups.hpp"
#include "stampede/policy_stats.hpp"
#include "upstream/async_event.hpp"
#include "upstream/call.hpp"
#include "upstream/pool.hpp"
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
  upstream::Pool& pool;
  int database;
  config::PolicySettings policy;
  std::shared_ptr<PolicyStats> stats;
  const cache::Clock& clock;
  FleetWakeups& wakeups;
  std::string token_prefix = random_token_prefix();
  std::uint64_t tokens = 0;

  upstream::Connection& connection() { return pool.shared(database); }

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
          if (done) done({answer.outcome, answer.reply, answer.duration, answer.lifetime});
        },
        asio::detached);
  }

 private:
  awaitable<Answer> fetch_or_refresh() {
    auto fresher_than = kAnyFresh;
    if (mode_ == Mode::miss) {
      const auto state = co_await read();
      if (!state) co_return fail(read_error_);
      if (state->fresh() || in_grace(*state)) co_return answer(*state, false);
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
        if (state->has_value) co_return answer(*state, false);
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
      if (auto answered = co_await wait_for_holder()) co_return std::move(*answered);
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
    const Answer fetched = co_await fetch_from(*inner);
    origin_duration_ = fetched.duration;
    if (fetched.outcome == origin::Outcome::failure ||
        fetched.outcome == origin::Outcome::error_reply) {
      release();
      co_return Answer{fetched.outcome, fetched.reply, elapsed(), std::nullopt};
    }
    const bool nil = fetched.outcome == origin::Outcome::nil;
    std::string value;
    if (!nil) {
      const auto decoded = resp::decode_reply(fetched.reply);
      if (!decoded || decoded->type != resp::Reply::Type::bulk) {
        release();
        co_return fail("ERR corral: fleet mode caches string values only");
      }
      value = decoded->text;
    }
    co_return co_await write(std::move(value), nil);
  }

  awaitable<Answer> fetch_from(origin::Origin& inner) {
    // Shared with the callback: an origin may call back late, or never (shutdown).
    struct Pending {
      explicit Pending(const asio::any_io_executor& executor) : answered(executor) {}
      upstream::AsyncEvent answered;
      Answer fetched;
    };
    const auto pending = std::make_shared<Pending>(shared_->executor);
    const auto argv = view();
    inner.fetch(argv, [pending](const origin::FetchResult& result) {
      pending->fetched = {result.outcome, std::string(result.reply), result.duration,
                          result.lifetime};
      pending->answered.notify();
    });
    co_await pending->answered.wait();
    co_return std::move(pending->fetched);
  }

  // The fenced write of value + shadow + metadata; answers with what the client should get.
  awaitable<Answer> write(std::string value, bool nil) {
    const auto& p = shared_->policy;
    const auto lifetime = entry_lifetime(p, nil, cache::thread_random());
    const auto fresh = std::max(milliseconds(1), duration_cast<milliseconds>(lifetime.ttl));
    const auto keep = nil ? fresh : fresh + std::max(p.grace, p.stale_if_error);
    const auto delta = duration_cast<milliseconds>(
        ewma(delta_, origin_duration_ + std::chrono::nanoseconds(p.fetch_delay)));
    const std::string fresh_ms = std::to_string(fresh.count());
    const std::string keep_ms = std::to_string(keep.count());
    const std::string delta_ms = std::to_string(delta.count());
    const std::string_view args[] = {token_, value, fresh_ms, keep_ms, delta_ms, nil ? "1" : "0"};
    const auto key_list = keys();
    const auto written =
        co_await upstream::call(shared_->connection(), fleet::write_script(), key_list, args);
    const auto grace = nil ? milliseconds(0) : p.grace;
    const origin::SharedLifetime stored{fresh, std::min(keep, fresh + grace), delta, true};
    if (written.ok() && written.reply == resp::kReplyOne)
      co_return value_answer(value, nil, stored);
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
    const auto reply = co_await upstream::call(shared_->connection(), fleet::read_script(),
                                               key_list, std::span<const std::string_view>());
    const auto state = reply.ok() ? fleet::parse_state(reply.reply) : std::nullopt;
    if (!state) {
      read_error_ = reply.ok() ? "ERR corral: unexpected fleet state" : reply.error;
      co_return std::nullopt;
    }
    if (state->delta.count() > 0) delta_ = state->delta;
    co_return state;
  }

  awaitable<upstream::CallResult> lock(milliseconds fresher_than) {
    token_ = shared_->token_prefix + std::to_string(++shared_->tokens);
    lock_ttl_ = shared_->lock_ttl(duration_cast<milliseconds>(delta_));
    const std::string ttl = std::to_string(lock_ttl_.count());
    const std::string min_left = std::to_string(fresher_than.count());
    const std::string_view args[] = {token_, ttl, min_left};
    const auto key_list = keys();
    co_return co_await upstream::call(shared_->connection(), fleet::lock_script(), key_list, args);
  }

  // Not awaited: the answer does not depend on it, and a lost release only makes others wait
  // for the lock's expiry.
  void release() {
    const std::string_view lock_key[] = {keys_.lock};
    const std::string_view args[] = {token_};
    auto target = upstream::CallbackTarget::make([](std::string_view, bool) {});
    fleet::release_script().run(shared_->connection(), lock_key, args, target, 0);
  }

  std::vector<std::string_view> keys() const { return {keys_.plain, keys_.shadow, keys_.lock}; }

  bool in_grace(const fleet::SharedState& state) const { return usable_for(state).count() > 0; }

  // How long the local copy may serve: the shadow's life, but no further than the grace window.
  milliseconds usable_for(const fleet::SharedState& state) const {
    if (!state.has_value) return milliseconds(0);
    const auto grace = state.nil ? milliseconds(0) : shared_->policy.grace;
    const auto window =
        state.fresh_for.count() > 0 ? state.fresh_for + grace : grace - stale_age(state);
    return std::clamp(window, milliseconds(0), state.shadow_for);
  }
  // Time since the soft expiry, derived from the shadow's remaining life.
  milliseconds stale_age(const fleet::SharedState& state) const {
    const auto& p = shared_->policy;
    return std::max(p.grace, p.stale_if_error) - state.shadow_for;
  }

  Answer answer(const fleet::SharedState& state, bool fetched) {
    delta_ = state.delta;
    origin::SharedLifetime lifetime{state.fresh_for, usable_for(state), state.delta, fetched};
    return value_answer(state.value, state.nil, lifetime);
  }

  Answer value_answer(std::string_view value, bool nil, const origin::SharedLifetime& lifetime) {
    std::string reply;
    if (nil) {
      reply = "$-1\r\n";
    } else {
      resp::append_bulk(reply, value);
    }
    return {nil ? origin::Outcome::nil : origin::Outcome::value, std::move(reply), elapsed(),
            lifetime};
  }

  Answer fail(std::string_view error) {
    return {origin::Outcome::failure, std::string(error), elapsed(), std::nullopt};
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
  std::chrono::nanoseconds origin_duration_{0};
  std::int64_t seen_stored_ms_ = -1;
  std::string read_error_;
  asio::steady_timer* wake_timer_ = nullptr;  // set while wait_for_holder runs
  bool woken_ = false;
};

}  // namespace

FleetOrigin::FleetOrigin(const asio::any_io_executor& executor,
                         std::shared_ptr<origin::Origin> inner, upstream::Pool& pool, int database,
                         const config::PolicySettings& policy, std::shared_ptr<PolicyStats> stats,
                         const cache::Clock& clock, FleetWakeups& wakeups)
    : inner_(std::move(inner)),
      shared_(std::make_shared<Shared>(
          Shared{executor, pool, database, policy, std::move(stats), clock, wakeups})) {}

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
