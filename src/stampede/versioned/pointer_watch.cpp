// The pointer watch: a timer on one io thread, one pipelined Lua script per versioned policy per
// tick, and a process-wide gate that lets CORRAL.ROLLOVER win over reads it overtook.
#include "stampede/versioned/pointer_watch.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <vector>

#include <spdlog/spdlog.h>

#include "resp/reply.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "stampede/policy/policy_runtime.hpp"
#include "stampede/versioned/versioned_origin.hpp"
#include "upstream/cluster/hash_tag.hpp"
#include "upstream/errors.hpp"
#include "upstream/keyed_call.hpp"
#include "upstream/keyed_caller.hpp"
#include "upstream/script.hpp"

namespace corral::stampede {

namespace {

// The pointer's value and the version it replaced (as CORRAL.ROLLOVER recorded it). An empty
// array when the pointer is not set; a nil previous when nothing was recorded.
const upstream::Script kReadPointer(R"lua(
local current = redis.call('GET', KEYS[1])
if not current then return {} end
return {current, redis.call('HGET', KEYS[2], 'v' .. current .. ':previous')}
)lua");

// With no versioned policy, how often a reload that adds one is looked for.
constexpr config::Duration kIdleTick{1000};

// Bumped by every rollover of this process; a pointer read answers for the epoch it began in.
std::mutex gate_mutex;
std::uint64_t gate_epoch = 0;

std::uint64_t current_epoch() {
  std::lock_guard lock(gate_mutex);
  return gate_epoch;
}

}  // namespace

std::string version_metadata_key(std::string_view pointer) {
  return upstream::companion_key(pointer, "versions");
}

void PointerWatch::apply_rollover(VersionState& versions, std::uint64_t current,
                                  std::uint64_t previous) {
  std::lock_guard lock(gate_mutex);
  ++gate_epoch;
  versions.set(current, previous);
}

// The replies of one tick, applied to the policy snapshot the tick read them for.
class PointerWatch::Replies final : public upstream::ReplyTarget {
 public:
  Replies(std::shared_ptr<PointerWatch> watch, std::shared_ptr<const PolicySet> policies)
      : watch_(std::move(watch)), policies_(std::move(policies)), epoch_(current_epoch()) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    --watch_->in_flight_;
    watch_->on_pointer(*policies_, tag, epoch_, reply);
  }
  void on_failure(std::uint64_t, std::string_view error) override {
    --watch_->in_flight_;
    watch_->on_failure(error);
  }

 private:
  std::shared_ptr<PointerWatch> watch_;
  std::shared_ptr<const PolicySet> policies_;
  std::uint64_t epoch_;
};

PointerWatch::PointerWatch(const boost::asio::any_io_executor& executor,
                           std::shared_ptr<upstream::KeyedCaller> caller, CacheRuntime& cache)
    : executor_(executor), caller_(std::move(caller)), cache_(cache), timer_(executor) {}

void PointerWatch::start() { tick(); }

void PointerWatch::stop() {
  stopping_ = true;
  timer_.cancel();
}

void PointerWatch::schedule(config::Duration delay) {
  timer_.expires_after(delay);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && !self->stopping_) self->tick();
  });
}

void PointerWatch::tick() {
  const auto policies = cache_.policies();
  std::optional<config::Duration> interval;  // the shortest pointer_refresh
  // A tick whose replies are still due (a slow upstream) is not stacked with another.
  const bool send = in_flight_ == 0;
  std::shared_ptr<Replies> replies;
  for (std::size_t i = 0; i < policies->settings.size(); ++i) {
    const auto& versioned = policies->settings[i].versioned;
    if (!versioned) continue;
    interval = std::min(interval.value_or(versioned->pointer_refresh), versioned->pointer_refresh);
    if (!send) continue;
    if (!replies) replies = std::make_shared<Replies>(shared_from_this(), policies);
    const std::string metadata = version_metadata_key(versioned->pointer);
    const std::string_view keys[] = {versioned->pointer, metadata};
    if (upstream::run(*caller_, kReadPointer, keys, {}, replies, i)) {
      ++in_flight_;
    } else {
      on_failure(upstream::kErrUnavailable);
    }
  }
  schedule(interval.value_or(kIdleTick));
}

void PointerWatch::on_failure(std::string_view error) {
  if (unreachable_) return;
  unreachable_ = true;
  spdlog::warn("version pointers unreadable ({}); keeping the last known versions", error);
}

void PointerWatch::on_pointer(const PolicySet& policies, std::size_t index, std::uint64_t epoch,
                              std::string_view reply) {
  if (unreachable_) {
    unreachable_ = false;
    spdlog::info("version pointers readable again");
  }
  const auto& policy = policies.settings[index];
  const auto& pointer = policy.versioned->pointer;
  auto& versions = policies.runtimes[index]->versions();
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != resp::Reply::Type::array) {
    const bool error = decoded && decoded->type == resp::Reply::Type::error;
    return note(policy.prefix,
                "pointer " + pointer + " unreadable: " + (error ? decoded->text : "bad reply"));
  }
  if (decoded->elements.empty()) {
    if (versions.current() == 0) return note(policy.prefix, "pointer " + pointer + " is not set");
    // Most likely an accident: serving on beats failing every read of the policy.
    return note(policy.prefix, "pointer " + pointer + " was deleted; keeping v" +
                                   std::to_string(versions.current()));
  }
  const auto current = parse_version(decoded->elements[0].text);
  if (!current || *current == 0) {
    return note(policy.prefix, "pointer " + pointer + " holds no version number: '" +
                                   decoded->elements[0].text + "'");
  }
  note(policy.prefix, {});
  const auto known = versions.current();
  const auto& recorded = decoded->elements.size() > 1 ? decoded->elements[1].text : "";
  auto previous = parse_version(recorded).value_or(0);
  // Set without CORRAL.ROLLOVER (no metadata): the version this process served before.
  if (previous == 0) previous = *current == known ? versions.previous() : known;
  std::lock_guard lock(gate_mutex);
  if (epoch != gate_epoch) return;  // a rollover overtook this read: the next tick follows it
  if (*current == known && previous == versions.previous()) return;
  versions.set(*current, previous);
  spdlog::info("policy '{}': version {} (was {}, fallback {})", policy.prefix, *current, known,
               previous);
}

void PointerWatch::note(const std::string& prefix, std::string problem) {
  auto& last = problems_[prefix];
  if (problem == last) return;
  if (!problem.empty()) spdlog::warn("policy '{}': {}", prefix, problem);
  last = std::move(problem);
}

}  // namespace corral::stampede
