// The waiting side of a miss: waiters of a flight (woken on their own thread, bounded by
// wait_timeout) and the on_overflow answers.
#include "stampede/read/waiter.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/post.hpp>

#include "stampede/engine.hpp"

namespace corral::stampede {

namespace asio = boost::asio;

namespace {
std::string timeout_reason(const WaiterSettings& policy) {
  return "ERR corral: timed out waiting for the origin (policy '" + policy.prefix + "')";
}
}  // namespace

void answer_without_fetch(Engine* engine, const WaiterSettings& policy,
                          const std::optional<std::string>& stale,
                          std::span<const std::string_view> argv, std::string_view reason,
                          const std::shared_ptr<upstream::ReplyTarget>& target, std::uint64_t tag) {
  switch (overflow_action(policy.on_overflow, stale.has_value())) {
    case OverflowAction::serve_stale:
      if (policy.stats) policy.stats->stale_serve(StaleReason::stale_if_error);
      target->on_reply(tag, *stale);
      return;
    case OverflowAction::fail:
      target->on_failure(tag, reason);
      return;
    case OverflowAction::passthrough:
      break;
  }
  const auto& origin = policy.source;
  if (!engine || !origin || argv.empty()) {
    target->on_failure(tag, reason);
    return;
  }
  // Uncoalesced and uncached, as the operator asked: the reply goes straight to the client.
  fetch_uncached(*origin, argv, target, tag);
}

void fetch_uncached(origin::Origin& origin, std::span<const std::string_view> argv,
                    const std::shared_ptr<upstream::ReplyTarget>& target, std::uint64_t tag) {
  origin.fetch(argv, [target, tag](const origin::FetchResult& result) {
    if (result.outcome == origin::Outcome::failure) {
      target->on_failure(tag, result.reply);
    } else {
      target->on_reply(tag, result.reply);
    }
  });
}

Waiter::Waiter(const std::shared_ptr<Engine>& engine, WaiterSettings policy,
               std::shared_ptr<upstream::ReplyTarget> target, std::uint64_t tag)
    : executor_(engine->executor()),
      engine_(engine),
      policy_(std::move(policy)),
      target_(std::move(target)),
      tag_(tag) {}

void Waiter::wait(const std::shared_ptr<Flight>& flight, std::optional<std::string> flight_key,
                  std::optional<std::string> stale, std::span<const std::string_view> argv) {
  flight_ = flight;
  flight_key_ = std::move(flight_key);
  stale_ = std::move(stale);
  // Kept for an uncached read on overflow or timeout (answer_without_fetch).
  if (policy_.on_overflow == config::OnOverflow::passthrough) argv_ = copy_argv(argv);
  // Armed even without a wait_timeout (then it never fires): the pending wait is what owns us.
  timer_.emplace(executor_);
  if (policy_.wait_timeout.count() > 0) {
    timer_->expires_after(policy_.wait_timeout);
  } else {
    timer_->expires_at(asio::steady_timer::time_point::max());
  }
  // The slowlog's start of the wait, from the clock reading the timer took anyway.
  waiting_since_ = policy_.wait_timeout.count() > 0 ? timer_->expiry() - policy_.wait_timeout
                                                    : std::chrono::steady_clock::now();
  timer_->async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->on_timeout();
  });
  if (!flight->add(shared_from_this())) deliver(flight->result);
}

void Waiter::flight_done(std::shared_ptr<FlightWaiter> self,
                         const std::shared_ptr<Flight>& flight) {
  // Nothing of ours is touched here (another thread): only the hop home.
  if (finished_.load(std::memory_order_acquire)) return;
  asio::post(executor_, [self = std::move(self), flight] {
    static_cast<Waiter&>(*self).deliver(flight->result);
  });
}

void Waiter::note_phases(const std::shared_ptr<upstream::ReplyTarget>& target, bool fetched,
                         std::chrono::nanoseconds lock_wait) const {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  const auto waited = std::chrono::steady_clock::now() - waiting_since_;
  slowlog::Phases phases;
  if (!fetched || flight_key_) {
    // A follower's wait is someone else's fetch (lock waits included).
    phases[slowlog::Phase::coalesced] =
        slowlog::saturated_micros(duration_cast<microseconds>(waited).count());
  } else {
    // The leader's wait is its own fetch, part of it perhaps waiting for another process's lock.
    const auto locked = std::min<std::chrono::nanoseconds>(lock_wait, waited);
    phases[slowlog::Phase::lock] =
        slowlog::saturated_micros(duration_cast<microseconds>(locked).count());
    phases[slowlog::Phase::origin] =
        slowlog::saturated_micros(duration_cast<microseconds>(waited - locked).count());
  }
  target->note_phases(tag_, phases);
}

void Waiter::deliver(const FlightResult& result) {
  if (finished_.exchange(true, std::memory_order_acq_rel)) return;
  const auto target = std::move(target_);
  note_phases(target, result.kind != FlightResult::Kind::overflow, result.lock_wait);
  switch (result.kind) {
    case FlightResult::Kind::reply:
      if (result.stale) policy_.stats->stale_serve(StaleReason::stale_if_error);
      target->on_reply(tag_, result.bytes);
      break;
    case FlightResult::Kind::failure:
      target->on_failure(tag_, result.bytes);
      break;
    case FlightResult::Kind::overflow: {
      // The origin queue turned the fetch away (full, or no slot in time): on_overflow decides,
      // with the queue's reason as the error.
      policy_.stats->waiter_overflowed();
      const auto engine = engine_.lock();
      const auto argv = view_argv(argv_);
      answer_without_fetch(engine.get(), policy_, stale_, argv, result.bytes, target, tag_);
      break;
    }
  }
  release();
}

void Waiter::on_timeout() {
  if (finished_.exchange(true, std::memory_order_acq_rel)) return;
  // Frees the place in the queue for someone else; the fetch itself goes on.
  const auto flight = flight_.lock();
  const auto runtime = policy_.runtime.lock();
  if (flight && runtime && flight_key_) runtime->flights().leave(*flight_key_, flight);
  policy_.stats->waiter_timed_out();
  note_phases(target_, false);
  const auto engine = engine_.lock();
  const auto argv = view_argv(argv_);
  answer_without_fetch(engine.get(), policy_, stale_, argv, timeout_reason(policy_), target_, tag_);
  release();
}

void Waiter::release() {
  target_.reset();
  timer_.reset();  // cancels a pending wait; safe from inside its own handler
  flight_.reset();
  stale_.reset();
  argv_.clear();
}

}  // namespace corral::stampede
