// Builds a policy's origin from its settings: http or redis, then `shared` and `versioned`.
#include "stampede/policy/policy_origins.hpp"

#include "origin/http_origin.hpp"
#include "stampede/engine.hpp"
#include "stampede/fleet/fleet_origin.hpp"
#include "stampede/versioned/versioned_origin.hpp"

namespace corral::stampede {

OriginFactory policy_origins(const boost::asio::any_io_executor& executor,
                             std::shared_ptr<upstream::KeyedCaller> fleet_caller,
                             CacheRuntime& runtime) {
  return [executor, fleet_caller, &runtime](const PolicyRef& policy,
                                            const std::shared_ptr<origin::Origin>& redis) {
    const auto& settings = policy.settings();
    std::shared_ptr<origin::Origin> source = redis;
    if (settings.origin == config::OriginKind::http) {
      source = std::make_shared<origin::HttpOrigin>(executor, settings.prefix, settings.http,
                                                    runtime.clock());
    }
    if (settings.shared) {
      source = std::make_shared<FleetOrigin>(executor, source, fleet_caller, settings,
                                             policy.set->stats[policy.index], runtime.clock(),
                                             runtime.fleet_wakeups(), &runtime.tags());
    }
    if (settings.versioned) {
      source = std::make_shared<VersionedOrigin>(source, policy.set->runtimes[policy.index],
                                                 policy.set->stats[policy.index], settings.prefix);
    }
    return source;
  };
}

}  // namespace corral::stampede
