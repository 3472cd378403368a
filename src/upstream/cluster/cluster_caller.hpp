// The KeyedCaller of a Redis Cluster (see keyed_caller.hpp).
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "upstream/cluster/cluster_links.hpp"
#include "upstream/keyed_caller.hpp"

namespace corral::upstream {

// By the key's slot through `links`, which must outlive the caller; MOVED/ASK/TRYAGAIN followed
// up to `max_redirects` hops (upstream.max_redirects).
std::shared_ptr<KeyedCaller> make_cluster_caller(const boost::asio::any_io_executor& executor,
                                                 ClusterLinks& links,
                                                 const KeyedCallerOptions& options,
                                                 int max_redirects);

}  // namespace corral::upstream
