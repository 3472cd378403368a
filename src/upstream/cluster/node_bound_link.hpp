// A client's connection of its own on a Redis Cluster (MULTI/WATCH, blocking commands, pub/sub)
// is bound to one node; when that node answers MOVED or ASK because the slot moved mid-session,
// the outcome is one a Redis client understands (see send_in_session), never a raw redirect.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "upstream/cluster/cluster_links.hpp"
#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"

namespace corral::upstream {

// The Link the session holds: today's connection to the node, replaceable by one to another node
// (a blocking command retried on the slot's new owner). Closing it closes the current one.
// It also keeps the client's shard channels: when the node ends one of them by itself (Redis sends
// `sunsubscribe` when the channel's slot moves), the client is not told; the link subscribes again
// on the slot's new owner (found through the MOVED its SSUBSCRIBE gets) and moves there.
class NodeBoundLink final : public Link, public std::enable_shared_from_this<NodeBoundLink> {
 public:
  NodeBoundLink(ClusterLinks& links, int max_redirects, std::shared_ptr<Link> connection, int node,
                int protocol)
      : links_(links),
        max_redirects_(max_redirects),
        connection_(std::move(connection)),
        node_(node),
        protocol_(protocol) {}

  bool send(std::string_view command, std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
            bool exempt_from_timeout) override;
  bool send_untracked(std::string_view command) override;
  void set_unsolicited_target(std::shared_ptr<ReplyTarget> target) override;
  // A MOVED or ASK reply also patches this thread's routing map and asks for a topology refresh,
  // so the client's next transaction or blocking command goes to the new owner.
  bool send_in_session(SessionCommand kind, std::string_view command,
                       std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
                       bool exempt_from_timeout) override;
  void follow_connections(ConnectionObserver observer) override;
  State state() const override { return connection_->state(); }
  bool reached_server() const override { return reached_earlier_ || connection_->reached_server(); }
  std::size_t in_flight() const override { return connection_->in_flight(); }
  void close() override { connection_->close(); }

  // Closes the current connection (nothing may be in flight on it) and uses one to `node` (an
  // index of the links' routes) from now on; false when none could be opened.
  bool move_to(int node);
  int node() const { return node_; }
  ClusterLinks& links() { return links_; }
  int max_redirects() const { return max_redirects_; }

  // A push or reply no command asked for; false when it was the node ending a shard channel the
  // client still holds (then swallowed, and the channel is subscribed again).
  bool follow_unsolicited(std::string_view message);
  // Subscribes `channel` again where its slot lives now (after a MOVED: moves there first).
  void resubscribe(const std::string& channel, int hops);

 private:
  void note_command(std::string_view command);
  void tell_observer();

  ClusterLinks& links_;
  int max_redirects_;
  std::shared_ptr<Link> connection_;
  int node_;
  int protocol_;
  bool reached_earlier_ = false;  // a connection the link left behind had reached its node
  ConnectionObserver observer_;   // told of each connection the link uses
  // The client's unsolicited target, wrapped: see follow_unsolicited.
  std::shared_ptr<ReplyTarget> follower_;
  std::set<std::string, std::less<>> shard_channels_;  // SSUBSCRIBEd and not SUNSUBSCRIBEd
};

}  // namespace corral::upstream
