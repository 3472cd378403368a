// Fleet mode's read, lock, fetch, fenced write and wait-for-the-holder steps for one key.
#include "stampede/fleet/fleet_origin.hpp"

#include <utility>

#include <algorithm>
#include <random>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "cache/random.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "resp/reply_constants.hpp"
#include "stampede/core/ewma.hpp"
#include "stampede/core/jitter.hpp"
#include "stampede/fleet/fleet_scripts.hpp"
#include "stampede/policy_stats.hpp"
#include "upstream/errors.hpp"
#include "upstream/pool.hpp"
#include "upstream/reply_target.hpp"

namespace corral::stampede {

namespace asio = boost::asio;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kMinLockTtl{1000};
// Waiting for another process's refresh: a read of the shared copy every delta / 8, within these.
constexpr milliseconds kPollMin{5};
constexpr milliseconds kPollMax{50};
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
enum class Mode { miss, stale, early };

// One fetch or refresh of one key; owned by whatever callback is pending (Redis or the origin).
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
    if (mode_ == Mode::miss) {
      read([self = shared_from_this()](const fleet::SharedState& state) {
        if (state.fresh() || self->in_grace(state)) return self->answer(state, false);
        self->lock(kAnyFresh);
      });
    } else {
      // XFetch refreshes within the last half of a TTL at most: more left means refreshed.
      lock(mode_ == Mode::stale ? kAnyFresh : shared_->policy.ttl / 2);
    }
  }

 private:
  using StateHandler = std::function<void(const fleet::SharedState&)>;

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

  void run(const upstream::Script& script, std::span<const std::string_view> args,
           upstream::CallbackTarget::Callback then) {
    const auto key_list = keys();
    auto target = upstream::CallbackTarget::make(std::move(then));
    if (script.run(shared_->connection(), key_list, args, target, 0)) return;
    asio::post(shared_->executor, [target] { target->on_failure(0, upstream::kErrUnavailable); });
  }

  void read(StateHandler then) {
    run(fleet::read_script(), {},
        [self = shared_from_this(), then = std::move(then)](std::string_view reply, bool failed) {
          const auto state = failed ? std::nullopt : fleet::parse_state(reply);
          if (!state) return self->fail(failed ? reply : "ERR corral: unexpected fleet state");
          if (state->delta.count() > 0) self->delta_ = state->delta;
          then(*state);
        });
  }

  // `fresher_than`: no lock if the shared copy has more freshness left (negative: no check).
  void lock(milliseconds fresher_than) {
    token_ = shared_->token_prefix + std::to_string(++shared_->tokens);
    lock_ttl_ = shared_->lock_ttl(duration_cast<milliseconds>(delta_));
    const std::string ttl = std::to_string(lock_ttl_.count());
    const std::string min_left = std::to_string(fresher_than.count());
    const std::string_view args[] = {token_, ttl, min_left};
    run(fleet::lock_script(), args,
        [self = shared_from_this()](std::string_view reply, bool failed) {
          if (failed || reply.empty() || reply.front() != ':') {
            return self->fail(failed ? reply : "ERR corral: fleet lock refused");
          }
          self->on_lock(reply);
        });
  }

  void on_lock(std::string_view reply) {
    if (reply == resp::kReplyOne) {
      shared_->stats->lock_acquired();
      const auto inner = inner_.lock();
      if (!inner) {
        release();
        return fail("ERR corral: the policy's origin was replaced by a reload");
      }
      const auto argv = view();
      inner->fetch(argv, [self = shared_from_this()](const origin::FetchResult& result) {
        self->on_origin(result);
      });
      return;
    }
    if (reply == ":2\r\n") {  // refreshed by another process since our copy went stale
      read([self = shared_from_this()](const fleet::SharedState& state) {
        if (!state.has_value) return self->lock(kNoCheck);
        self->answer(state, false);
      });
      return;
    }
    shared_->stats->lock_contended();
    if (deadline_ == cache::TimePoint{}) deadline_ = shared_->clock.now() + 2 * lock_ttl_;
    if (mode_ != Mode::early || seen_stored_ms_ >= 0) return wait_for_holder();
    // An early refresh happens while the shared copy is fresh: wait for a newer one.
    read([self = shared_from_this()](const fleet::SharedState& state) {
      self->seen_stored_ms_ = state.stored_ms;
      self->wait_for_holder();
    });
  }

  // The holder writes, gives up (its lock goes), or dies (its lock expires): poll until one.
  void wait_for_holder() {
    if (shared_->clock.now() >= deadline_) {
      return fail("ERR corral: fleet refresh of '" + keys_.plain +
                  "' is held by another process (lock not released)");
    }
    const auto poll = std::clamp(duration_cast<milliseconds>(delta_) / 8, kPollMin, kPollMax);
    timer_.emplace(shared_->executor, poll);
    timer_->async_wait([self = shared_from_this()](boost::system::error_code) {
      self->read([self](const fleet::SharedState& state) {
        if (state.fresh() && state.stored_ms != self->seen_stored_ms_) {
          return self->answer(state, false);
        }
        if (state.lock_for.count() > 0) return self->wait_for_holder();
        // The holder is gone without writing. An early refresh was optional: keep the copy.
        if (self->mode_ == Mode::early && state.fresh()) return self->answer(state, false);
        self->lock(kAnyFresh);  // take over
      });
    });
  }

  void on_origin(const origin::FetchResult& result) {
    origin_duration_ = result.duration;
    if (result.outcome == origin::Outcome::failure ||
        result.outcome == origin::Outcome::error_reply) {
      release();
      return deliver({result.outcome, result.reply, elapsed(), std::nullopt});
    }
    const bool nil = result.outcome == origin::Outcome::nil;
    std::string value;
    if (!nil) {
      const auto decoded = resp::decode_reply(result.reply);
      if (!decoded || decoded->type != resp::Reply::Type::bulk) {
        release();
        return fail("ERR corral: fleet mode caches string values only");
      }
      value = decoded->text;
    }
    write(std::move(value), nil);
  }

  void write(std::string value, bool nil) {
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
    run(fleet::write_script(), args,
        [self = shared_from_this(), value, nil, fresh, keep, delta](std::string_view reply,
                                                                    bool failed) {
          const auto grace = nil ? milliseconds(0) : self->shared_->policy.grace;
          const origin::SharedLifetime stored{fresh, std::min(keep, fresh + grace), delta, true};
          if (!failed && reply == resp::kReplyOne) return self->deliver_value(value, nil, stored);
          if (failed || reply != resp::kReplyZero) {
            // Redis refused or lost the write (OOM, READONLY ...): what we fetched is still the
            // origin's answer. The lock goes, so others need not wait for it to expire.
            spdlog::warn("fleet: refresh of '{}' was not stored in Redis: {}", self->keys_.plain,
                         reply.substr(0, reply.find('\r')));
            self->release();
            return self->deliver_value(value, nil, stored);
          }
          // Fenced: our lock expired during the fetch and a successor may have written since.
          self->shared_->stats->write_fenced();
          spdlog::warn("fleet: refresh of '{}' took longer than its lock; its write was refused",
                       self->keys_.plain);
          self->read([self, value, nil, stored](const fleet::SharedState& state) {
            if (state.fresh()) return self->answer(state, true);
            self->deliver_value(value, nil, stored);
          });
        });
  }

  void release() {
    const std::string_view lock_key[] = {keys_.lock};
    const std::string_view args[] = {token_};
    auto target = upstream::CallbackTarget::make([](std::string_view, bool) {});
    fleet::release_script().run(shared_->connection(), lock_key, args, target, 0);
  }

  void answer(const fleet::SharedState& state, bool fetched) {
    delta_ = state.delta;
    origin::SharedLifetime lifetime{state.fresh_for, usable_for(state), state.delta, fetched};
    deliver_value(state.value, state.nil, lifetime);
  }

  void deliver_value(std::string_view value, bool nil, const origin::SharedLifetime& lifetime) {
    std::string reply;
    if (nil) {
      reply = "$-1\r\n";
    } else {
      resp::append_bulk(reply, value);
    }
    deliver({nil ? origin::Outcome::nil : origin::Outcome::value, reply, elapsed(), lifetime});
  }

  void fail(std::string_view error) {
    deliver({origin::Outcome::failure, error, elapsed(), std::nullopt});
  }

  void deliver(const origin::FetchResult& result) {
    timer_.reset();
    auto done = std::move(done_);
    if (done) done(result);
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
  std::optional<asio::steady_timer> timer_;
};

}  // namespace

FleetOrigin::FleetOrigin(const asio::any_io_executor& executor,
                         std::shared_ptr<origin::Origin> inner, upstream::Pool& pool, int database,
                         const config::PolicySettings& policy, std::shared_ptr<PolicyStats> stats,
                         const cache::Clock& clock)
    : inner_(std::move(inner)),
      shared_(std::make_shared<Shared>(
          Shared{executor, pool, database, policy, std::move(stats), clock})) {}

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
