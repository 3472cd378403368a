// A policy of one snapshot as the engine passes it around: the snapshot and an index into it.
#pragma once

#include <cstddef>
#include <memory>

#include "config/settings.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "stampede/policy/policy_runtime.hpp"
#include "stampede/policy/policy_stats.hpp"

namespace corral::stampede {

// One policy of one snapshot; holding the snapshot keeps the settings valid across a reload.
struct PolicyRef {
  std::shared_ptr<const PolicySet> set;
  std::size_t index = 0;

  const config::PolicySettings& settings() const { return set->settings[index]; }
  PolicyRuntime& runtime() const { return *set->runtimes[index]; }
  PolicyStats& stats() const { return *set->stats[index]; }
};

}  // namespace corral::stampede
