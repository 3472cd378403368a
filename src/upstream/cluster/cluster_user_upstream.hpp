// An upstream ACL user's own connections to a Redis Cluster's nodes: what UserPools builds for a
// cluster upstream. They route by the same process-wide topology as Corral's own.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "config/settings.hpp"
#include "upstream/user_login.hpp"

namespace corral::metrics {
class ThreadStats;
}

namespace corral::upstream {

class Topology;

std::unique_ptr<UserUpstream> make_cluster_user_upstream(
    const boost::asio::any_io_executor& executor, const config::UpstreamSettings& settings,
    std::shared_ptr<Topology> topology, metrics::ThreadStats* stats, UserLogin login);

}  // namespace corral::upstream
