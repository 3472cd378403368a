// The fallback to the previous version: a key missing in version N (a nil, or nil elements of an
// MGET) is read again as `<key>:v<previous>`.
#include "stampede/versioned/versioned_origin.hpp"

#include <atomic>
#include <chrono>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "resp/array_elements.hpp"
#include "resp/encoder.hpp"
#include "stampede/policy/policy_runtime.hpp"
#include "stampede/policy/policy_stats.hpp"

namespace corral::stampede {

struct VersionedOrigin::Context {
  std::shared_ptr<origin::Origin> inner;
  std::shared_ptr<PolicyStats> stats;
  std::string prefix;
  std::atomic<std::uint64_t> announced{0};  // the version whose first fallback was logged at info

  void count_fallback(std::string_view key, std::uint64_t from, std::uint64_t to) {
    stats->version_fallback();
    spdlog::debug("policy '{}': {} missing in v{}, reading v{}", prefix, key, from, to);
    // Once per version at info level: a version loaded incompletely shows in the log without
    // one line per key.
    if (announced.exchange(from, std::memory_order_relaxed) != from) {
      spdlog::info("policy '{}': keys missing in v{} are read from v{} (first: {})", prefix, from,
                   to, key);
    }
  }
};

namespace {

using origin::FetchResult;
using origin::Outcome;

bool is_mget(std::string_view command) {
  return command.size() == 4 && (command[0] | 0x20) == 'm' && (command[1] | 0x20) == 'g' &&
         (command[2] | 0x20) == 'e' && (command[3] | 0x20) == 't';
}

// One fetch that may need a second one: the request, copied (the caller's argv is gone by then).
struct Fallback {
  std::shared_ptr<VersionedOrigin::Context> context;
  std::vector<std::string> argv;
  std::uint64_t current = 0;
  std::uint64_t previous = 0;
  origin::FetchCallback done;
  std::string first_reply;           // MGET: the answer of version `current`
  std::vector<std::size_t> missing;  // MGET: its nil elements

  std::string previous_key(std::string_view key) const {
    const auto split = split_versioned_key(key);
    return split ? versioned_key(split->user_key, previous) : std::string(key);
  }
};

void finish(Fallback& fallback, const FetchResult& result) {
  auto done = std::move(fallback.done);
  done(result);
}

// MGET: the previous version's answer for the nil elements, spliced into the first answer.
void splice(Fallback& fallback, const FetchResult& second, std::chrono::nanoseconds first) {
  const auto duration = first + second.duration;
  if (second.outcome != Outcome::value) {
    return finish(fallback, FetchResult(second.outcome, second.reply, duration, second.lifetime));
  }
  const auto elements = resp::array_elements(fallback.first_reply);
  const auto found = resp::array_elements(second.reply);
  if (!elements || !found || found->size() != fallback.missing.size()) {
    return finish(fallback, FetchResult(Outcome::failure,
                                        "ERR unexpected MGET reply from the upstream", duration));
  }
  auto merged = *elements;
  for (std::size_t i = 0; i < fallback.missing.size(); ++i) {
    merged[fallback.missing[i]] = (*found)[i];
  }
  std::string out;
  resp::append_array_header(out, merged.size());
  for (const auto element : merged) out.append(element);
  finish(fallback, FetchResult(Outcome::value, out, duration, second.lifetime));
}

// Asks the previous version for what version `current` did not have.
void read_previous(const std::shared_ptr<Fallback>& fallback, const FetchResult& first) {
  auto& context = *fallback->context;
  std::vector<std::string> argv{fallback->argv.front()};
  if (fallback->missing.empty()) {
    context.count_fallback(fallback->argv[1], fallback->current, fallback->previous);
    argv.push_back(fallback->previous_key(fallback->argv[1]));
    argv.insert(argv.end(), fallback->argv.begin() + 2, fallback->argv.end());
  } else {
    for (const auto index : fallback->missing) {
      const auto& key = fallback->argv[1 + index];
      context.count_fallback(key, fallback->current, fallback->previous);
      argv.push_back(fallback->previous_key(key));
    }
    fallback->first_reply.assign(first.reply);
  }
  const std::vector<std::string_view> views(argv.begin(), argv.end());
  const auto first_duration = first.duration;
  context.inner->fetch(views, [fallback, first_duration](const FetchResult& second) {
    if (!fallback->missing.empty()) return splice(*fallback, second, first_duration);
    finish(*fallback, FetchResult(second.outcome, second.reply, first_duration + second.duration,
                                  second.lifetime));
  });
}

void on_current(const std::shared_ptr<Fallback>& fallback, const FetchResult& result) {
  if (is_mget(fallback->argv.front()) && result.outcome == Outcome::value) {
    if (const auto elements = resp::array_elements(result.reply)) {
      for (std::size_t i = 0; i < elements->size(); ++i) {
        if ((*elements)[i] == "$-1\r\n") fallback->missing.push_back(i);
      }
    }
    if (!fallback->missing.empty()) return read_previous(fallback, result);
  }
  if (result.outcome == Outcome::nil) return read_previous(fallback, result);
  finish(*fallback, result);
}

}  // namespace

VersionedOrigin::VersionedOrigin(std::shared_ptr<origin::Origin> inner,
                                 std::shared_ptr<PolicyRuntime> runtime,
                                 std::shared_ptr<PolicyStats> stats, std::string prefix)
    : runtime_(std::move(runtime)), context_(std::make_shared<Context>()) {
  context_->inner = std::move(inner);
  context_->stats = std::move(stats);
  context_->prefix = std::move(prefix);
}

std::string_view VersionedOrigin::name() const { return context_->inner->name(); }

void VersionedOrigin::fetch(std::span<const std::string_view> argv, origin::FetchCallback done) {
  ask(argv, std::nullopt, std::move(done));
}

void VersionedOrigin::refresh(std::span<const std::string_view> argv, origin::FetchReason reason,
                              origin::FetchCallback done) {
  ask(argv, reason, std::move(done));
}

void VersionedOrigin::ask(std::span<const std::string_view> argv,
                          std::optional<origin::FetchReason> reason, origin::FetchCallback done) {
  auto& inner = *context_->inner;
  const auto send = [&](origin::FetchCallback callback) {
    if (reason) return inner.refresh(argv, *reason, std::move(callback));
    inner.fetch(argv, std::move(callback));
  };
  // The fallback is decided when the fetch starts: a rollover meanwhile changes nothing for it.
  const auto previous = runtime_->versions().previous();
  const auto key = argv.size() >= 2 ? split_versioned_key(argv[1]) : std::nullopt;
  if (!key || previous == 0 || previous == key->version) return send(std::move(done));
  auto fallback = std::make_shared<Fallback>();
  fallback->context = context_;
  fallback->argv.assign(argv.begin(), argv.end());
  fallback->current = key->version;
  fallback->previous = previous;
  fallback->done = std::move(done);
  send([fallback](const FetchResult& result) { on_current(fallback, result); });
}

}  // namespace corral::stampede
