// CORRAL.ROLLOVER prefix new_version [expected_old_version] and CORRAL.PURGE prefix version:
// admin commands of `versioned:` policies. They talk to the upstream Redis, so unlike the other
// local commands they answer later, through the request's reply slot.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "proxy/client_state.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {
class KeyedCaller;
}
namespace corral::stampede {
class CacheRuntime;
}

namespace corral::proxy {

struct VersionCall {
  std::string_view command;  // the table row: "corral.rollover" or "corral.purge"
  ClientState& client;
  std::span<const std::string_view> argv;  // valid during the call only
  upstream::KeyedCaller& caller;           // this io thread's: by the key's slot on a cluster
  stampede::CacheRuntime* cache;           // null: caching is off (every prefix is unknown)
};

// True for the command table rows answered by run_version_command ("corral.rollover" ...).
bool is_version_command(std::string_view row_name);

// Answers exactly once through target->on_reply / on_failure(tag): at once when the request is
// refused, else once Redis has answered (on this thread).
//
// ROLLOVER sets the policy's pointer key to new_version with a compare-and-set script (refused
// with -VERSION_MISMATCH when expected_old_version is given and differs, refused when the
// version is already current), records the swap in the pointer's metadata hash, makes this
// process read the new version, then replies with the version it replaced (0: none).
// PURGE deletes every `<prefix>*:v<version>` key (SCAN + UNLINK in batches, on every primary of a
// cluster) and replies with the count; refused for the current version, the `keep` most recent
// ones, a version retired less than `grace` ago, and a version newer than the current one that was
// never current.
void run_version_command(const VersionCall& call, std::uint64_t tag,
                         const std::shared_ptr<upstream::ReplyTarget>& target);

}  // namespace corral::proxy
