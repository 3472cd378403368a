// A client's connection of its own on a Redis Cluster (MULTI/WATCH, blocking commands, pub/sub)
// is bound to one node; when that node answers MOVED or ASK because the slot moved mid-session,
// the outcome is one a Redis client understands (see send_on_node), never a raw redirect.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

class ClusterRouter;

// The Link the session holds: today's connection to the node, replaceable by one to another node
// (a blocking command retried on the slot's new owner). Closing it closes the current one.
// It also keeps the client's shard channels: when the node ends one of them by itself (Redis sends
// `sunsubscribe` when the channel's slot moves), the client is not told; the link subscribes again
// on the slot's new owner (found through the MOVED its SSUBSCRIBE gets) and moves there.
class NodeBoundLink final : public upstream::Link,
                            public std::enable_shared_from_this<NodeBoundLink> {
 public:
  NodeBoundLink(ClusterRouter& router, std::shared_ptr<upstream::Link> connection, int node,
                int protocol)
      : router_(router), connection_(std::move(connection)), node_(node), protocol_(protocol) {}

  bool send(std::string_view command, std::shared_ptr<upstream::ReplyTarget> target,
            std::uint64_t tag, bool exempt_from_timeout) override;
  bool send_untracked(std::string_view command) override;
  void set_unsolicited_target(std::shared_ptr<upstream::ReplyTarget> target) override;
  State state() const override { return connection_->state(); }
  std::size_t in_flight() const override { return connection_->in_flight(); }
  void close() override { connection_->close(); }

  // Closes the current connection (nothing may be in flight on it) and uses one to `node` (an
  // index of the router's routes) from now on; false when none could be opened.
  bool move_to(int node);
  int node() const { return node_; }
  // From now on each connection the link uses first asks Redis its id, for CLIENT UNBLOCK of
  // client `client_id` (see client_unblock.hpp); the current one too.
  void learn_upstream_ids_for(std::uint64_t client_id);
  ClusterRouter& router() { return router_; }

  // A push or reply no command asked for; false when it was the node ending a shard channel the
  // client still holds (then swallowed, and the channel is subscribed again).
  bool follow_unsolicited(std::string_view message);
  // Subscribes `channel` again where its slot lives now (after a MOVED: moves there first).
  void resubscribe(const std::string& channel, int hops);

 private:
  void note_command(std::string_view command);

  ClusterRouter& router_;
  std::shared_ptr<upstream::Link> connection_;
  int node_;
  int protocol_;
  std::uint64_t client_id_ = 0;  // 0: no CLIENT ID asked on new connections
  // The client's unsolicited target, wrapped: see follow_unsolicited.
  std::shared_ptr<upstream::ReplyTarget> follower_;
  std::set<std::string, std::less<>> shard_channels_;  // SSUBSCRIBEd and not SUNSUBSCRIBEd
};

// What a command on a node-bound connection is, for its answer to a MOVED or ASK:
enum class BoundCommand : std::uint8_t {
  blocking,  // outside MULTI: re-sent on a connection to the new owner (the block starts over)
  exec,      // EXEC: -EXECABORT naming the move (Redis discarded the transaction)
  other,     // queued in MULTI, WATCH, commands while watching: a clear -ERR naming the move
};

// Sends `command` on `link`; its outcome reaches target->on_*(tag) exactly once. A MOVED reply
// also patches this thread's routing map and asks for a topology refresh, so the client's next
// transaction or blocking command goes to the new owner. False when nothing was sent.
bool send_on_node(ClusterRouter& router, const std::shared_ptr<NodeBoundLink>& link,
                  BoundCommand kind, std::string_view command, int protocol, std::uint64_t tag,
                  const std::shared_ptr<upstream::ReplyTarget>& target, bool exempt_from_timeout);

}  // namespace corral::proxy
