// CORRAL.ROLLOVER's conversation with Redis: the compare-and-set script on the pointer key, then
// this process switched to the new version before anyone hears OK.
#pragma once

#include <utility>

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "stampede/versioned/versioned_policy.hpp"
#include "upstream/call.hpp"

namespace corral::upstream {
class KeyedCaller;
}

namespace corral::stampede {

struct RolloverRequest {
  VersionedPolicy policy;
  std::uint64_t version = 0;   // > 0
  std::uint64_t expected = 0;  // for the mismatch message
  std::string expected_text;   // "" : any current version
  std::string who;             // recorded in the pointer's metadata hash
};

// Sets the pointer to `version` unless the current one differs from `expected_text` (an error
// reply VERSION_MISMATCH) or is `version` already; records the swap in the metadata hash. The
// result's reply is the client's: the replaced version as an integer (0: none), or an error reply.
// The pointer and its metadata hash share a slot: on a cluster the script runs on its node.
boost::asio::awaitable<upstream::CallResult> rollover(std::shared_ptr<upstream::KeyedCaller> caller,
                                                      RolloverRequest request);

}  // namespace corral::stampede
