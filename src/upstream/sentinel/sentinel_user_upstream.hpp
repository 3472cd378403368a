// An upstream ACL user's own connections to a Sentinel-managed primary: what UserPools builds for
// a Sentinel upstream. They follow the primary with Corral's own links of the same io thread.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "upstream/user_login.hpp"

namespace corral::upstream {

class SentinelLinks;

// `leader`: the io thread's own links to the primary; it must outlive the UserPools that call this.
std::unique_ptr<UserUpstream> make_sentinel_user_upstream(
    const boost::asio::any_io_executor& executor, int database, SentinelLinks& leader,
    UserLogin login);

}  // namespace corral::upstream
