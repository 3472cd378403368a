// CORRAL.INFO key, CORRAL.INVALIDATE key|prefix*|TAG name, CORRAL.STATS: answered from the cache
// runtime.
#include "proxy/local/admin_commands.hpp"

#include <chrono>

#include "proxy/resp3.hpp"
#include "resp/ascii.hpp"
#include "resp/encoder.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "upstream/keyed_caller.hpp"
#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

namespace {
using std::chrono::duration_cast;
using std::chrono::milliseconds;

std::int64_t millis_between(cache::TimePoint from, cache::TimePoint to) {
  return duration_cast<milliseconds>(to - from).count();
}

// Admin commands need the admin password when one is configured.
bool refused(LocalCall& call) {
  if (call.client.admin) return false;
  resp::append_error(call.reply,
                     "NOPERM CORRAL admin commands need AUTH with client.admin_password");
  return true;
}

// The admin commands read the cache runtime; a dispatcher built without one (as in some unit
// tests) answers an error rather than dereferencing it.
bool refused_or_cacheless(LocalCall& call) {
  if (refused(call)) return true;
  if (call.cache != nullptr) return false;
  resp::append_error(call.reply, "ERR corral: this process has no cache runtime");
  return true;
}

// Answers a tag purge once Redis has counted it: every process tracking the tag keys (the whole
// fleet) purges the tag when the INCR's invalidation reaches it.
class TagPurgeTarget final : public upstream::ReplyTarget {
 public:
  TagPurgeTarget(std::shared_ptr<upstream::ReplyTarget> client, std::string tag)
      : client_(std::move(client)), tag_(std::move(tag)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    if (!reply.empty() && reply.front() == ':') return client_->on_reply(tag, "+OK\r\n");
    fail(tag, reply.substr(0, reply.find('\r')));
  }
  void on_failure(std::uint64_t tag, std::string_view error) override { fail(tag, error); }

 private:
  void fail(std::uint64_t tag, std::string_view why) {
    std::string reply;
    resp::append_error(reply, "ERR corral: tag '" + tag_ +
                                  "' was purged on this process only; the fleet was not told (" +
                                  std::string(why) + ")");
    client_->on_reply(tag, reply);
  }
  std::shared_ptr<upstream::ReplyTarget> client_;
  std::string tag_;
};

// CORRAL.INVALIDATE TAG name: O(1), no entry is visited; each tagged entry is found purged when
// next read. Here at once, then fleet-wide through an INCR of the tag's key in Redis.
Action invalidate_tag(LocalCall& call, std::string_view tag) {
  call.cache->tags().purge(tag);
  if (call.keyed == nullptr || call.target == nullptr) {
    resp::append_simple(call.reply, "OK");
    return Action::done;
  }
  const std::string key = stampede::tag_key(tag);
  const std::string_view incr[] = {"INCR", key};
  std::string command;
  resp::append_command(command, incr);
  call.deferred = true;
  auto target = std::make_shared<TagPurgeTarget>(*call.target, std::string(tag));
  // On a cluster the tag's key lives on its slot's node, which tracks it for the fleet.
  if (!call.keyed->send(key, command, target, call.tag)) {
    target->on_failure(call.tag, "upstream unavailable");
  }
  return Action::done;
}

}  // namespace

bool refused_unless_admin(LocalCall& call) { return refused(call); }

// A flat array of field/value pairs, like HGETALL: policy, state, age_ms, ttl_ms, grace_ms,
// delta_ms, hits, bytes. Reports the key's GET entry (the unit most policies cache).
Action corral_info(LocalCall& call) {
  if (refused_or_cacheless(call)) return Action::done;
  auto& runtime = *call.cache;
  const auto key = call.argv[1];
  const auto policies = runtime.policies();
  const auto index = policies->matcher.match(key);
  if (!index) {
    resp::append_array_header(call.reply, 4);
    resp::append_field(call.reply, "policy", "none");
    resp::append_field(call.reply, "state", "uncached");
    return Action::done;
  }
  const auto now = runtime.clock().now();
  const auto entry = runtime.store().peek(cache::CacheKey{key, "GET"}, now);
  if (!entry) {
    resp::append_array_header(call.reply, 4);
    resp::append_field(call.reply, "policy", policies->settings[*index].prefix);
    resp::append_field(call.reply, "state", "absent");
    return Action::done;
  }
  const auto state = entry->state(now);
  const std::string_view state_name = entry->negative                     ? "negative"
                                      : state == cache::EntryState::fresh ? "fresh"
                                                                          : "stale";
  resp::append_array_header(call.reply, 18);
  resp::append_field(call.reply, "policy", policies->settings[*index].prefix);
  resp::append_field(call.reply, "state", state_name);
  resp::append_field(call.reply, "age_ms", millis_between(entry->stored_at, now));
  resp::append_field(call.reply, "ttl_ms",
                     std::max<std::int64_t>(0, millis_between(now, entry->soft_expiry)));
  // The freshness it was stored with (the policy's ttl or the origin's Cache-Control): a test or
  // an operator can check it without racing the clock.
  resp::append_field(call.reply, "lifetime_ms", duration_cast<milliseconds>(entry->ttl()).count());
  resp::append_field(call.reply, "grace_ms",
                     std::max<std::int64_t>(0, millis_between(now, entry->hard_expiry)));
  resp::append_field(call.reply, "delta_ms", duration_cast<milliseconds>(entry->delta).count());
  resp::append_field(call.reply, "hits", entry->hits);
  resp::append_field(call.reply, "bytes", static_cast<std::int64_t>(entry->value.size()));
  return Action::done;
}

// CORRAL.INVALIDATE key drops every cached reply of the key; "prefix*" drops all keys under it;
// TAG name purges every entry whose origin response carried the tag (Surrogate-Key / Cache-Tag).
Action corral_invalidate(LocalCall& call) {
  if (refused_or_cacheless(call)) return Action::done;
  auto& runtime = *call.cache;
  if (call.argv.size() == 3 && resp::iequals(call.argv[1], "TAG"))
    return invalidate_tag(call, call.argv[2]);
  if (call.argv.size() != 2) {
    resp::append_error(call.reply, "ERR syntax error: CORRAL.INVALIDATE key | prefix* | TAG name");
    return Action::done;
  }
  const auto target = call.argv[1];
  std::size_t dropped = 0;
  if (!target.empty() && target.back() == '*') {
    dropped = runtime.invalidate_prefix(target.substr(0, target.size() - 1),
                                        stampede::InvalidationSource::admin);
  } else {
    dropped = runtime.invalidate_key(target, stampede::InvalidationSource::admin);
  }
  resp::append_integer(call.reply, static_cast<std::int64_t>(dropped));
  return Action::done;
}

}  // namespace corral::proxy

namespace corral::proxy {

namespace {
constexpr std::string_view kBreakerStates[] = {"closed", "open", "half-open"};

void append_policy_stats(std::string& reply, const stampede::PolicyStatsSnapshot& stats) {
  using stampede::InvalidationSource;
  using stampede::LookupOutcome;
  constexpr LookupOutcome kOutcomes[] = {LookupOutcome::hit, LookupOutcome::stale,
                                         LookupOutcome::miss, LookupOutcome::coalesced,
                                         LookupOutcome::negative};
  constexpr InvalidationSource kSources[] = {InvalidationSource::write,
                                             InvalidationSource::tracking,
                                             InvalidationSource::admin, InvalidationSource::flush};
  // The fields are counted as they are written, so the array header cannot fall out of step with
  // them when a field is added (it did once, and the extra fields became the client's next reply).
  std::string out;
  std::size_t fields = 0;
  const auto counter = [&out, &fields](std::string_view name, std::uint64_t value) {
    resp::append_field(out, name, static_cast<std::int64_t>(value));
    ++fields;
  };
  resp::append_field(out, "policy", stats.prefix);
  ++fields;
  for (auto outcome : kOutcomes) {
    counter(std::string("lookups_") + std::string(stampede::to_string(outcome)),
            stats.lookup(outcome));
  }
  counter("early_refreshes", stats.early_refreshes);
  counter("background_refreshes", stats.background_refreshes);
  counter("origin_requests", stats.origin_requests);
  counter("origin_errors", stats.origin_errors);
  counter("stampede_blocked", stats.stampede_blocked);
  counter("waiters_overflowed", stats.waiters_overflowed);
  counter("waiters_timed_out", stats.waiters_timed_out);
  counter("locks_acquired", stats.locks_acquired);
  counter("locks_contended", stats.locks_contended);
  counter("writes_fenced", stats.writes_fenced);
  counter("version_fallbacks", stats.version_fallbacks);
  for (auto source : kSources) {
    counter(std::string("invalidations_") + std::string(stampede::to_string(source)),
            stats.invalidation(source));
  }
  const auto breaker = static_cast<std::size_t>(stats.breaker_state);
  resp::append_field(out, "breaker",
                     breaker < std::size(kBreakerStates) ? kBreakerStates[breaker] : "unknown");
  ++fields;
  counter("origin_in_flight", static_cast<std::uint64_t>(stats.origin_in_flight));
  counter("origin_queued", stats.origin_queued);
  for (auto reason : {stampede::QueueRejection::full, stampede::QueueRejection::timeout}) {
    counter(std::string("origin_queue_rejected_") + std::string(stampede::to_string(reason)),
            stats.queue_rejections[static_cast<std::size_t>(reason)]);
  }
  resp::append_array_header(reply, 2 * fields);
  reply += out;
}
}  // namespace

// One flat field/value array per policy, like HGETALL replies, in configuration order.
Action corral_stats(LocalCall& call) {
  if (refused_or_cacheless(call)) return Action::done;
  const auto all = call.cache->all_stats();
  resp::append_array_header(call.reply, all.size());
  for (const auto& stats : all) append_policy_stats(call.reply, stats);
  return Action::done;
}

}  // namespace corral::proxy
