// A client's connection of its own on a Redis Cluster (MULTI/WATCH, blocking commands, pub/sub)
// is bound to one node; when that node answers MOVED or ASK because the slot moved mid-session,
// the outcome is one a Redis client understands (see send_on_node), never a raw redirect.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"

namespace corral::proxy {

class ClusterRouter;

// The Link the session holds: today's connection to the node, replaceable by one to another node
// (a blocking command retried on the slot's new owner). Closing it closes the current one.
class NodeBoundLink final : public upstream::Link {
 public:
  explicit NodeBoundLink(std::shared_ptr<upstream::Link> connection)
      : connection_(std::move(connection)) {}

  bool send(std::string_view command, std::shared_ptr<upstream::ReplyTarget> target,
            std::uint64_t tag, bool exempt_from_timeout) override {
    return connection_->send(command, std::move(target), tag, exempt_from_timeout);
  }
  bool send_untracked(std::string_view command) override {
    return connection_->send_untracked(command);
  }
  void set_unsolicited_target(std::shared_ptr<upstream::ReplyTarget> target) override {
    unsolicited_ = target;
    connection_->set_unsolicited_target(std::move(target));
  }
  State state() const override { return connection_->state(); }
  std::size_t in_flight() const override { return connection_->in_flight(); }
  void close() override { connection_->close(); }

  // Closes the current connection (nothing may be in flight on it) and uses `next` from now on.
  void replace(std::shared_ptr<upstream::Link> next);

 private:
  std::shared_ptr<upstream::Link> connection_;
  std::shared_ptr<upstream::ReplyTarget> unsolicited_;
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
