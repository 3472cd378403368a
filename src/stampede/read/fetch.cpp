// The fetching side of a miss or a refresh: the circuit breaker after admission (see
// fetch_admission.cpp), one origin request, and the outcome stored (with fill tickets, jittered
// lifetimes and the EWMA of fetch times) and handed to every waiter of the flight.
#include "stampede/read/fetch.hpp"

#include <utility>

#include <algorithm>

#include <boost/asio/post.hpp>

#include "resp/array_elements.hpp"
#include "stampede/core/entry_meta.hpp"
#include "stampede/core/ewma.hpp"
#include "stampede/core/jitter.hpp"
#include "stampede/core/response_lifetime.hpp"
#include "stampede/engine.hpp"

namespace corral::stampede {

namespace {

constexpr std::string_view kBadMgetReply = "ERR corral: unexpected MGET reply from the origin";

bool same_policy(const PolicyRef& a, const PolicyRef& b) { return &a.runtime() == &b.runtime(); }

}  // namespace

void Fetch::start(std::span<const std::string_view> argv) {
  // Before the request (and before any wait for a slot): a tag purged from here on also purges
  // what this fetch brings back.
  tag_generation_ = runtime_.tags().generation();
  if (admit()) {
    proceed(argv);
    return;
  }
  if (elements.empty()) queued_argv_ = copy_argv(argv);
}

void Fetch::proceed(std::span<const std::string_view> argv) {
  const auto now = runtime_.clock().now();
  for (auto& key : leaders) {
    if (!key.active) continue;
    key.breaker = key.policy.runtime().breaker();
    key.admission = key.breaker->admit(now);
    if (key.admission == Admission::rejected) {
      const auto reason =
          "ERR corral: origin circuit open for policy '" + key.policy.settings().prefix + "'";
      finish_key(key, stale_or_failure(key, reason));
    }
  }
  std::erase_if(counted_, [&](const PolicyRef& policy) {
    const bool used = std::any_of(leaders.begin(), leaders.end(), [&](const KeyFetch& key) {
      return key.active && same_policy(key.policy, policy);
    });
    if (!used) release_slot(policy);
    return !used;
  });

  std::vector<std::string_view> batch;
  if (elements.empty()) {
    if (leaders.empty() || !leaders.front().active) return;
  } else {
    std::erase_if(elements,
                  [&](const Element& e) { return e.leader >= 0 && !leaders[e.leader].active; });
    if (elements.empty()) return;
    batch.reserve(elements.size() + 1);
    batch.push_back("MGET");
    for (const auto& element : elements) batch.push_back(element.key);
    argv = batch;
  }
  for (const auto& key : leaders) {
    if (!key.active || !key.background) continue;
    key.policy.stats().background_refresh();
    if (key.early) key.policy.stats().early_refresh();
  }
  send(argv);
}

void Fetch::send(std::span<const std::string_view> argv) {
  for (const auto& key : leaders) {
    if (key.active)
      delay_ = std::max<std::chrono::nanoseconds>(delay_, key.policy.settings().fetch_delay);
  }
  if (delay_.count() == 0) {
    ask_origin(argv);
    return;
  }
  delayed_argv_ = copy_argv(argv);
  delay_timer_.emplace(executor_, delay_);
  delay_timer_->async_wait([self = shared_from_this()](boost::system::error_code) {
    self->ask_origin(view_argv(self->delayed_argv_));
  });
}

void Fetch::ask_origin(std::span<const std::string_view> argv) {
  origin::FetchCallback done = [self = shared_from_this()](const origin::FetchResult& result) {
    self->on_result(result);
  };
  const auto origin = origin_.lock();
  if (!origin) {
    boost::asio::post(executor_, [done = std::move(done)] {
      done({origin::Outcome::failure, "ERR corral: the policy's origin was replaced by a reload",
            std::chrono::nanoseconds(0)});
    });
    return;
  }
  const KeyFetch* single = elements.empty() && !leaders.empty() ? &leaders.front() : nullptr;
  if (single && ask_conditionally(*origin, argv, done)) return;
  if (single && single->background) {
    const auto reason = single->early ? origin::FetchReason::early : origin::FetchReason::stale;
    origin->refresh(argv, reason, std::move(done));
    return;
  }
  origin->fetch(argv, std::move(done));
}

bool Fetch::ask_conditionally(origin::Origin& origin, std::span<const std::string_view> argv,
                              origin::FetchCallback& done) {
  const KeyFetch& key = leaders.front();
  // Fleet mode revalidates the shared copy itself, with the validators kept in Redis.
  if (key.policy.settings().origin != config::OriginKind::http || key.policy.settings().shared)
    return false;
  const auto now = runtime_.clock().now();
  const auto copy = runtime_.store().peek(key.key(), now);
  if (!copy || copy->negative || copy->meta.empty() || tags_purged(*copy, runtime_.tags()))
    return false;
  auto meta = EntryMeta::decode(copy->meta);
  if (!meta || meta->validators.empty()) return false;
  revalidated_value_ = copy->value;
  revalidated_tags_ = std::move(meta->tags);
  revalidated_validators_ = meta->validators;
  const auto reason = !key.background ? origin::FetchReason::miss
                      : key.early     ? origin::FetchReason::early
                                      : origin::FetchReason::stale;
  origin.revalidate(argv, reason, meta->validators, std::move(done));
  return true;
}

bool Fetch::resolve_not_modified(origin::FetchResult& result, origin::ResponseCaching& caching) {
  if (!revalidated_value_) return false;
  result.reply = *revalidated_value_;
  // A 304 may leave out the validators and tags; the copy it renews keeps its own.
  if (caching.validators.empty()) caching.validators = revalidated_validators_;
  if (caching.tags.empty()) caching.tags = revalidated_tags_;
  return true;
}

void Fetch::on_result(const origin::FetchResult& reply) {
  // The simulated delay is part of what a fetch costs (XFetch's delta must see it).
  origin::FetchResult result = reply;
  result.duration += delay_;
  if (result.caching && result.caching->not_modified) {
    if (!resolve_not_modified(result, *result.caching)) {
      result.outcome = origin::Outcome::failure;
      result.reply = "ERR corral: origin answered 304 Not Modified to an unconditional request";
      result.caching.reset();
    }
  }
  if (revalidated_value_ && result.outcome != origin::Outcome::failure && !leaders.empty()) {
    const bool same = result.caching && result.caching->not_modified;
    leaders.front().policy.stats().revalidation(same ? RevalidationResult::not_modified
                                                     : RevalidationResult::modified);
  }
  const bool failed = result.outcome == origin::Outcome::failure;
  // A value read from the fleet's shared copy cost the origin nothing.
  const bool asked_origin = !result.lifetime || result.lifetime->fetched;
  for (const auto& policy : counted_) {
    release_slot(policy);
    if (asked_origin) policy.stats().origin_request(result.duration, failed);
  }
  counted_.clear();
  if (elements.empty()) {
    complete_key(leaders.front(), result.outcome, result.reply, result.duration, result.lifetime,
                 result.caching ? &*result.caching : nullptr, result.lock_wait);
    return;
  }
  if (result.outcome != origin::Outcome::value) {
    fail_elements(result.outcome, result.reply, result.duration);
    return;
  }
  const auto items = resp::array_elements(result.reply, elements.size());
  if (!items) {
    fail_elements(origin::Outcome::failure, kBadMgetReply, result.duration);
    return;
  }
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const auto& element = elements[i];
    const auto item = (*items)[i];
    if (element.leader >= 0) {
      complete_key(leaders[element.leader], origin::classify_reply(item), item, result.duration);
    } else {
      element.assembly->on_reply(element.part, item);
    }
  }
}

void Fetch::fail_elements(origin::Outcome outcome, std::string_view reply,
                          std::chrono::nanoseconds duration) {
  for (const auto& element : elements) {
    if (element.leader >= 0) {
      complete_key(leaders[element.leader], outcome, reply, duration);
    } else if (outcome == origin::Outcome::failure) {
      element.assembly->on_failure(element.part, reply);
    } else {
      element.assembly->on_reply(element.part, reply);
    }
  }
}

// With on_invalidate: refresh, the invalidation that refused this fill wanted a fresh value:
// fetch again once this flight has ended (its refresh would otherwise see this one in flight).
void Fetch::refetch_after_invalidation(const KeyFetch& key) {
  if (key.policy.settings().on_invalidate != config::OnInvalidate::refresh) return;
  auto engine = refresh_again.lock();
  if (!engine) return;
  boost::asio::post(executor_, [engine, user_key = std::string(key.key().user_key)] {
    engine->refresh_invalidated(user_key);
  });
}

void Fetch::complete_key(KeyFetch& key, origin::Outcome outcome, std::string_view reply,
                         std::chrono::nanoseconds duration,
                         const std::optional<origin::SharedLifetime>& shared,
                         const origin::ResponseCaching* caching,
                         std::chrono::nanoseconds lock_wait) {
  if (!key.active) return;
  const auto now = runtime_.clock().now();
  const auto& settings = key.policy.settings();
  auto& policy_runtime = key.policy.runtime();
  FlightResult result{FlightResult::Kind::reply, std::string(reply)};
  if (outcome == origin::Outcome::failure) {
    key.breaker->record_failure(key.admission, now);
    policy_runtime.backoff().record_failure(key.flight_key, now, BackoffPolicy::from(settings),
                                            random());
    result = stale_or_failure(key, reply);
  } else {
    // An error reply (WRONGTYPE ...) is an answer too: the origin is healthy.
    key.breaker->record_success(key.admission);
    policy_runtime.backoff().record_success(key.flight_key);
    const bool negative = outcome == origin::Outcome::nil;
    if (caching && !caching->store) {
      // no-store / private: this answer is delivered (to every waiter) but kept by no one, and
      // a copy stored before it is outdated by it.
      runtime_.store().erase(key.key());
    } else if (outcome == origin::Outcome::value ||
               (negative && settings.negative_ttl.count() > 0)) {
      store_key(key, result.bytes, negative, duration, shared, caching);
    }
  }
  if (key.background) key.policy.stats().background_refresh_done(duration);
  result.lock_wait = lock_wait;
  finish_key(key, std::move(result));
}

void Fetch::store_key(KeyFetch& key, std::string_view reply, bool negative,
                      std::chrono::nanoseconds duration,
                      const std::optional<origin::SharedLifetime>& shared,
                      const origin::ResponseCaching* caching) {
  const auto now = runtime_.clock().now();
  const auto& settings = key.policy.settings();
  auto lifetime = entry_lifetime(settings, negative, random());
  auto delta = ewma(key.previous_delta, duration);
  std::string meta;
  if (shared) {
    // The shared store's clock decides, so every process of a fleet expires it together.
    lifetime.ttl = shared->fresh_for;
    lifetime.grace = shared->usable_for - shared->fresh_for;
    if (shared->stale_if_error) lifetime.stale_if_error = *shared->stale_if_error;
    delta = shared->delta;
    if (caching && !caching->tags.empty()) {
      // The fleet layer checked the shared copy's tags; this process's copy follows purges too.
      if (runtime_.tags().purged_after(caching->tags, tag_generation_)) return;
      EntryMeta tagged;
      tagged.tag_generation = tag_generation_;
      tagged.stale_if_error =
          std::chrono::duration_cast<std::chrono::milliseconds>(lifetime.stale_if_error);
      tagged.tags = caching->tags;
      meta = tagged.encode();
    }
  } else if (caching) {
    // A tag purged while the request was out: the answer may predate the purge.
    if (runtime_.tags().purged_after(caching->tags, tag_generation_)) return;
    auto http =
        response_lifetime(lifetime, *caching, negative, tag_generation_, settings.http.max_ttl);
    lifetime = http.lifetime;
    meta = std::move(http.meta);
  }
  auto entry = cache::Entry::make(std::string(reply), now, lifetime, delta, negative);
  entry.meta = std::move(meta);
  // The ticket refuses the value if a write invalidated the key since the flight began.
  const auto stored = runtime_.store().store(key.key(), entry, key.flight->ticket);
  if (stored == cache::StoreResult::superseded) refetch_after_invalidation(key);
  if (shared && shared->fresh_for.count() == 0 && !key.background) {
    // Whether or not the local copy was kept: the expiry of the shared copy's plain key is an
    // invalidation too, and may refuse it. After finish_key: a refresh started before the
    // flight ends would see it in flight.
    if (auto engine = refresh_again.lock()) {
      boost::asio::post(executor_, [engine, user_key = std::string(key.user_key), delta] {
        engine->refresh_shared_copy(user_key, delta);
      });
    }
  }
}

void Fetch::finish_key(KeyFetch& key, FlightResult result) {
  key.active = false;
  // Stored first, then the flight ends: a request arriving in between finds the new entry
  // instead of starting a second fetch.
  key.policy.runtime().flights().finish(key.flight_key, key.flight);
  key.flight->complete(std::move(result));
}

FlightResult Fetch::stale_or_failure(const KeyFetch& key, std::string_view error) {
  // Read now, not when the flight began: a write meanwhile must not bring the old value back.
  const auto now = runtime_.clock().now();
  const auto entry = runtime_.store().peek(key.key(), now);
  if (entry && !entry->negative && now < serve_on_error_until(*entry) &&
      !tags_purged(*entry, runtime_.tags())) {
    FlightResult stale{FlightResult::Kind::reply, entry->value};
    stale.stale = true;
    return stale;
  }
  return {FlightResult::Kind::failure, std::string(error)};
}

}  // namespace corral::stampede
