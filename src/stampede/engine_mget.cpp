// MGET through the cache: answered key by key from the store; the missing keys of redis-origin
// policies fetched together in one upstream MGET (and cached as GETs), those of other origins
// (http, fleet, versioned) read one by one through their own origin.
#include "resp/encoder.hpp"
#include "stampede/engine.hpp"
#include "stampede/version_key.hpp"

namespace corral::stampede {

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
    if (state != cache::EntryState::fresh && state != cache::EntryState::stale) {
      complete = false;
      continue;
    }
    policy.stats().lookup(state == cache::EntryState::stale ? LookupOutcome::stale
                          : entry_.negative                 ? LookupOutcome::negative
                                                            : LookupOutcome::hit);
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
    const bool error_only = copy && copy->state(now) == cache::EntryState::error_only;
    KeyFetch lead;
    switch (plan_miss(policy, key, get_argv, error_only ? &*copy : nullptr, assembly, i, lead)) {
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
    bool answered = false;
    if (!resolve_version(policy, get_argv, part, assembly, answered)) return;
    argv = versioned_argv_;
  }
  serve_key(policy, {user_key, variant_}, argv, part, assembly);
}

}  // namespace corral::stampede
