// CORRAL.PURGE's conversation with Redis: the check script (current, kept, in grace, never
// current) on the pointer's node, then on every primary SCAN + UNLINK batches of
// `<prefix>*:v<version>` until its cursor comes back 0.
#pragma once

#include <utility>

#include <cstdint>
#include <memory>

#include <boost/asio/awaitable.hpp>

#include "stampede/versioned/versioned_policy.hpp"
#include "upstream/call.hpp"

namespace corral::upstream {
class KeyedCaller;
}

namespace corral::stampede {

// The result's reply is the client's: the number of keys deleted, or an error reply saying why
// the version may not be purged (or that a purge was interrupted after some keys). A failure
// before anything was deleted is the call's failure.
boost::asio::awaitable<upstream::CallResult> purge(std::shared_ptr<upstream::KeyedCaller> caller,
                                                   VersionedPolicy policy, std::uint64_t version);

}  // namespace corral::stampede
