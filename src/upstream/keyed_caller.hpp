// Corral's own conversations with Redis about keys (fleet scripts, version pointers, purges):
// each command goes to the server that holds its key, the one upstream or, on a Redis Cluster,
// the node serving the key's slot, following MOVED / ASK like a client's command.
#pragma once

#include <utility>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "upstream/reply_target.hpp"

namespace corral::upstream {

// One per io thread; used on that thread only. Contract of both sends: either the command is
// queued and its outcome reaches target->on_*(tag) exactly once, never from within the send,
// or the send returns false having told nobody.
class KeyedCaller : public std::enable_shared_from_this<KeyedCaller> {
 public:
  virtual ~KeyedCaller() = default;

  virtual const boost::asio::any_io_executor& executor() const = 0;
  // `command` reads or writes keys of `key`'s hash slot only (a script's keys share it).
  virtual bool send(std::string_view key, std::string command, std::shared_ptr<ReplyTarget> target,
                    std::uint64_t tag) = 0;
  // Commands every primary must run (SCAN): the primaries now, by name ("host:port"; one without
  // a cluster; none while a cluster's slot map is unknown), and a send to one of them by name
  // (redirects not followed), so a conversation stays on its node across slot map refreshes.
  virtual std::vector<std::string> primaries() = 0;
  // True on a cluster: a multi-key command must keep to keys of one slot.
  virtual bool by_slot() const = 0;
  virtual bool send_to_primary(std::string_view primary, std::string command,
                               std::shared_ptr<ReplyTarget> target, std::uint64_t tag) = 0;
};

// How a cluster caller rides out a failover: calls wait for the promoted replica up to about
// `failover_retries` * 100 ms. Give 0 to calls that must not run twice (a lost connection
// leaves them run or not).
// Redirects are followed up to the upstream's own upstream.max_redirects, not the caller's choice.
// A keyed caller works in the upstream's own database (Upstream::database()).
struct KeyedCallerOptions {
  int failover_retries = 0;
};

// The implementations: single/single_caller.hpp, cluster/cluster_caller.hpp; callers get theirs
// from Upstream::keyed_caller.

}  // namespace corral::upstream
