// An upstream ACL user's own pool on one Redis: what UserPools builds for a single-Redis upstream.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "config/settings.hpp"
#include "upstream/user_login.hpp"

namespace corral::metrics {
class ThreadStats;
}

namespace corral::upstream {

std::unique_ptr<UserUpstream> make_single_user_upstream(
    const boost::asio::any_io_executor& executor, const config::UpstreamSettings& settings,
    metrics::ThreadStats* stats, UserLogin login);

}  // namespace corral::upstream
