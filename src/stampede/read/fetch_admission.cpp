// A fetch's way to the origin through each policy's queue (max_origin_concurrency,
// max_origin_queue, origin_queue_timeout): a slot at once, a wait in arrival order, or on_overflow
// for its waiters when the queue is full or the wait too long.
#include <utility>

#include <algorithm>
#include <functional>
#include <string>

#include <boost/asio/post.hpp>

#include "stampede/read/cached_command.hpp"
#include "stampede/read/fetch.hpp"

namespace corral::stampede {

namespace {

std::string rejection_reason(const PolicyRef& policy, QueueRejection reason) {
  const auto& settings = policy.settings();
  std::string text = "ERR corral: origin concurrency limit reached for policy '" + settings.prefix +
                     "' (max_origin_concurrency " +
                     std::to_string(settings.max_origin_concurrency) + ")";
  if (reason == QueueRejection::full) {
    text += settings.max_origin_queue == 0 ? ""
                                           : " and its queue is full (max_origin_queue " +
                                                 std::to_string(settings.max_origin_queue) + ")";
  } else {
    text += ": no slot within origin_queue_timeout";
  }
  return text;
}

}  // namespace

bool Fetch::has_clients(const PolicyRef& policy) const {
  return std::any_of(leaders.begin(), leaders.end(), [&](const KeyFetch& key) {
    return key.active && !key.background && &key.policy.runtime() == &policy.runtime();
  });
}

OriginLimits Fetch::limits(const PolicyRef& policy) const {
  const auto& settings = policy.settings();
  // A background refresh does not queue: the stale copy serves meanwhile, and the queue's places
  // are for misses that have clients waiting.
  return {settings.max_origin_concurrency, has_clients(policy) ? settings.max_origin_queue : 0};
}

bool Fetch::admit() {
  for (;;) {
    // The next policy to take a slot of: the lowest runtime address not yet held.
    const PolicyRef* next = nullptr;
    for (const auto& key : leaders) {
      if (!key.active) continue;
      const auto* runtime = &key.policy.runtime();
      const bool held = std::any_of(counted_.begin(), counted_.end(),
                                    [&](const PolicyRef& p) { return &p.runtime() == runtime; });
      if (!held && (!next || std::less<>{}(runtime, &next->runtime()))) next = &key.policy;
    }
    if (!next) return true;
    const PolicyRef policy = *next;
    const auto entered = policy.runtime().origin_queue().enter(
        weak_from_this(), runtime_.clock().now(), limits(policy));
    switch (entered.entry) {
      case OriginEntry::started:
        counted_.push_back(policy);
        break;
      case OriginEntry::queued:
        wait_in_queue(policy, entered.ticket);
        return false;
      case OriginEntry::full:
        reject(policy, QueueRejection::full);
        break;
    }
  }
}

void Fetch::wait_in_queue(const PolicyRef& policy, std::uint64_t ticket) {
  queued_for_ = policy;
  queue_ticket_ = ticket;
  const auto wait = ++queue_waits_;
  queue_timer_.emplace(executor_, policy.settings().origin_queue_timeout);
  queue_timer_->async_wait([self = shared_from_this(), wait](boost::system::error_code ec) {
    if (!ec) self->queue_timed_out(wait);
  });
}

void Fetch::admitted(std::chrono::nanoseconds waited) {
  if (!queued_for_) return;
  const PolicyRef policy = std::move(*queued_for_);
  queued_for_.reset();
  queue_timer_.reset();  // its pending wait ends with operation_aborted
  policy.stats().queue_wait(waited);
  counted_.push_back(policy);
  if (admit()) proceed(view_argv(queued_argv_));
}

void Fetch::queue_timed_out(std::uint64_t wait) {
  // A timer that fired while the handoff was on its way, or one of an earlier wait.
  if (!queued_for_ || wait != queue_waits_) return;
  if (!queued_for_->runtime().origin_queue().withdraw(queue_ticket_)) return;
  const PolicyRef policy = std::move(*queued_for_);
  queued_for_.reset();
  queue_timer_.reset();
  reject(policy, QueueRejection::timeout);
  if (admit()) proceed(view_argv(queued_argv_));
}

void Fetch::reject(const PolicyRef& policy, QueueRejection reason) {
  // A background refresh turned away is only skipped (its stale copy keeps serving): no client
  // sees it, so it is not a rejection.
  if (has_clients(policy)) policy.stats().queue_rejected(reason);
  const auto text = rejection_reason(policy, reason);
  for (auto& key : leaders) {
    if (key.active && &key.policy.runtime() == &policy.runtime()) {
      finish_key(key, {FlightResult::Kind::overflow, text});
    }
  }
}

void Fetch::release_slot(const PolicyRef& policy) {
  auto& queue = policy.runtime().origin_queue();
  const OriginLimits slot_limits{policy.settings().max_origin_concurrency,
                                 policy.settings().max_origin_queue};
  // A queued fetch whose io thread is gone (shutdown) passes the slot on to the next one.
  while (auto next = queue.release(runtime_.clock().now(), slot_limits)) {
    if (auto fetch = next->payload.lock()) {
      const auto executor = fetch->executor_;
      boost::asio::post(
          executor, [fetch = std::move(fetch), waited = next->waited] { fetch->admitted(waited); });
      return;
    }
  }
}

}  // namespace corral::stampede
