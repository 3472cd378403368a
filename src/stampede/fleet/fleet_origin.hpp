// Fleet mode (`shared: true`): an origin layer that keeps a fleet of Corral processes to one
// origin fetch per key, through the value, shadow copy and lock kept in the upstream Redis.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "cache/clock.hpp"
#include "config/settings.hpp"
#include "origin/origin.hpp"

namespace corral::upstream {
class KeyedCaller;
}

namespace corral::stampede {

class PolicyStats;
class FleetWakeups;
class TagEpochs;

// One per policy per io thread; fetch()/refresh() on that thread only.
//   fetch (a local miss): read the shared copy; fresh or in grace -> that is the answer (with the
//     lifetime Redis holds for it); none -> the refresh path.
//   refresh (stale or early): take the lock (SET NX PX in a script that first checks nobody
//     refreshed already); the winner asks `inner`, writes value + shadow + metadata fenced by
//     its token and releases; a loser waits until the winner's write lands (woken by its tracking
//     invalidation through `wakeups`, with a slow poll of the shared copy as the fallback) or the
//     lock goes (then it takes over), bounded by twice the lock TTL.
// With `tags`, a shared copy records the purge count of each of its tags and one whose tag was
// purged since (CORRAL.INVALIDATE TAG INCRs the count) is refetched rather than served.
class FleetOrigin final : public origin::Origin {
 public:
  FleetOrigin(const boost::asio::any_io_executor& executor, std::shared_ptr<origin::Origin> inner,
              std::shared_ptr<upstream::KeyedCaller> caller, const config::PolicySettings& policy,
              std::shared_ptr<PolicyStats> stats, const cache::Clock& clock, FleetWakeups& wakeups,
              TagEpochs* tags = nullptr);
  ~FleetOrigin() override;

  std::string_view name() const override { return inner_->name(); }
  void fetch(std::span<const std::string_view> argv, origin::FetchCallback done) override;
  void refresh(std::span<const std::string_view> argv, origin::FetchReason reason,
               origin::FetchCallback done) override;

  struct Shared;  // what the fetches of this origin share (settings, connections, token source)

 private:
  std::shared_ptr<origin::Origin> inner_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace corral::stampede
