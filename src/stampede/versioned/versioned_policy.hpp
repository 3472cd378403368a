// The versioned policy an admin command names, found in the current policy snapshot, and the
// {status, current, detail} verdict the ROLLOVER and PURGE check scripts reply with.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/settings.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "stampede/policy/policy_runtime.hpp"

namespace corral::stampede {

// A policy of one snapshot with its process-wide state; `error` says why there is none.
struct VersionedPolicy {
  std::shared_ptr<const PolicySet> policies;  // keeps `settings` valid
  const config::PolicySettings* settings = nullptr;
  std::shared_ptr<PolicyRuntime> runtime;
  std::string error;  // an error reply's text ("ERR no policy with prefix ...")
};

// `cache` null: caching is off, so no prefix names a policy.
VersionedPolicy find_versioned_policy(CacheRuntime* cache, std::string_view prefix);

struct ScriptVerdict {
  std::string status;
  std::uint64_t current = 0;
  std::int64_t detail = 0;
};

// nullopt when `reply` is not such an array.
std::optional<ScriptVerdict> read_script_verdict(std::string_view reply);

// The RESP error reply for `message` ("ERR ...", "VERSION_MISMATCH ...").
std::string error_reply(std::string_view message);

}  // namespace corral::stampede
