// A Redis Cluster, logged in as an upstream ACL user: a ClusterPool of that user and the
// ClusterUpstream over it.
#include "upstream/cluster/cluster_user_upstream.hpp"

#include "upstream/cluster/cluster_pool.hpp"
#include "upstream/cluster/cluster_upstream.hpp"

namespace corral::upstream {

namespace {

class ClusterUserUpstream final : public UserUpstream {
 public:
  ClusterUserUpstream(const boost::asio::any_io_executor& executor,
                      const config::UpstreamSettings& settings, std::shared_ptr<Topology> topology,
                      metrics::ThreadStats* stats, UserLogin login)
      : settings_(settings),
        pool_(executor, settings_, std::move(topology), stats, std::move(login)),
        upstream_(executor, pool_, settings_) {}
  ~ClusterUserUpstream() override { pool_.close(); }

  Upstream& upstream() override { return upstream_; }
  bool refused() const override { return pool_.refused(); }

 private:
  config::UpstreamSettings settings_;  // ClusterUpstream keeps a reference
  ClusterPool pool_;
  ClusterUpstream upstream_;
};

}  // namespace

std::unique_ptr<UserUpstream> make_cluster_user_upstream(
    const boost::asio::any_io_executor& executor, const config::UpstreamSettings& settings,
    std::shared_ptr<Topology> topology, metrics::ThreadStats* stats, UserLogin login) {
  return std::make_unique<ClusterUserUpstream>(executor, settings, std::move(topology), stats,
                                               std::move(login));
}

}  // namespace corral::upstream
