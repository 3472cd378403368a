// The redirect guard of a node-bound connection. What a cluster client expects: Redis itself
// answers a command queued after its slot moved with -MOVED and the EXEC with EXECABORT (the
// transaction is discarded); redis-py 4.3 (Debian's) refuses transactions on a cluster and
// re-sends any other command answered MOVED to the new owner after updating its map, blocking
// ones included. A client of Corral does not know the cluster, so a transaction gets the same
// outcome in words it understands (an error naming the move, EXECABORT) while Corral reroutes the
// slot for the retry, and a blocking command is simply sent again to the new owner.
#include "upstream/cluster/node_bound_link.hpp"

#include <fmt/format.h>

#include <string>

#include "config/values.hpp"
#include "resp/ascii.hpp"
#include "resp/encoder.hpp"
#include "resp/reply.hpp"
#include "upstream/cluster/redirect.hpp"

namespace corral::upstream {

using resp::iequals;

namespace {

class RedirectGuard final : public ReplyTarget, public std::enable_shared_from_this<RedirectGuard> {
 public:
  RedirectGuard(ClusterLinks& links, int max_redirects, std::weak_ptr<NodeBoundLink> link,
                SessionCommand kind, std::string_view command, std::shared_ptr<ReplyTarget> target)
      : links_(links),
        max_redirects_(max_redirects),
        link_(std::move(link)),
        kind_(kind),
        command_(kind == SessionCommand::blocking ? std::string(command) : std::string()),
        target_(std::move(target)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    const auto redirect =
        reply.empty() || reply.front() != '-' ? std::nullopt : read_redirect(reply);
    if (!redirect) return target_->on_reply(tag, reply);
    const int node = apply_redirect(links_, *redirect);
    if (kind_ == SessionCommand::blocking && hops_ < max_redirects_ && node >= 0 &&
        retry_on(node, redirect->moved, tag)) {
      return;
    }
    std::string error;
    const auto moved =
        fmt::format("slot {} moved to {}:{}", redirect->slot, redirect->to.host, redirect->to.port);
    resp::append_error(
        error, kind_ == SessionCommand::exec
                   ? fmt::format("EXECABORT Transaction discarded: its {}; retry it", moved)
                   : fmt::format("ERR the {} during the session; retry the transaction", moved));
    target_->on_reply(tag, error);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    target_->on_failure(tag, error);
  }

 private:
  bool retry_on(int node, bool moved, std::uint64_t tag) {
    ++hops_;
    const auto link = link_.lock();  // gone: the session ended meanwhile
    if (!link || !link->move_to(node)) return false;
    if (!moved && !link->send(kAskingCommand, std::make_shared<DiscardTarget>(), 0, false))
      return false;
    return link->send(command_, shared_from_this(), tag, true);
  }

  ClusterLinks& links_;
  int max_redirects_;
  // Weak: the guard sits in the link's connection while its command is in flight, and a strong
  // reference back would keep both alive after the session lets go of the link.
  std::weak_ptr<NodeBoundLink> link_;
  SessionCommand kind_;
  std::string command_;  // blocking commands only: what a retry sends again
  std::shared_ptr<ReplyTarget> target_;
  int hops_ = 0;
};

// The unsolicited stream of a node-bound connection, seen by the link first.
class Follower final : public ReplyTarget {
 public:
  Follower(std::weak_ptr<NodeBoundLink> link, std::shared_ptr<ReplyTarget> client)
      : link_(std::move(link)), client_(std::move(client)) {}
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    const auto link = link_.lock();
    if (link && !link->follow_unsolicited(reply)) return;
    client_->on_reply(tag, reply);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    client_->on_failure(tag, error);
  }

 private:
  std::weak_ptr<NodeBoundLink> link_;
  std::shared_ptr<ReplyTarget> client_;
};

// The confirmation (or MOVED) of an SSUBSCRIBE the link sent for itself.
class Resubscribe final : public ReplyTarget {
 public:
  Resubscribe(std::weak_ptr<NodeBoundLink> link, std::string channel, int hops)
      : link_(std::move(link)), channel_(std::move(channel)), hops_(hops) {}
  void on_reply(std::uint64_t, std::string_view reply) override {
    const auto link = link_.lock();
    const auto redirect = read_redirect(reply);
    if (!link || !redirect) return;  // subscribed (or the session ended meanwhile)
    const int node = apply_redirect(link->links(), *redirect);
    if (hops_ >= link->max_redirects()) return;
    if (node != link->node() && !link->move_to(node)) return;
    link->resubscribe(channel_, hops_ + 1);
  }
  void on_failure(std::uint64_t, std::string_view) override {}

 private:
  std::weak_ptr<NodeBoundLink> link_;
  std::string channel_;
  int hops_;
};

}  // namespace

bool NodeBoundLink::move_to(int node) {
  auto next = links_.dedicated_node_link(node, protocol_);
  if (!next) return false;
  reached_earlier_ = reached_earlier_ || connection_->reached_server();
  connection_->set_unsolicited_target(nullptr);
  connection_->close();
  connection_ = std::move(next);
  node_ = node;
  if (follower_) connection_->set_unsolicited_target(follower_);
  tell_observer();
  return true;
}

void NodeBoundLink::follow_connections(ConnectionObserver observer) {
  observer_ = std::move(observer);
  tell_observer();
}

void NodeBoundLink::tell_observer() {
  if (observer_) {
    observer_(*connection_, config::format_endpoint(links_.routes().nodes[node_].endpoint));
  }
}

bool NodeBoundLink::send(std::string_view command, std::shared_ptr<ReplyTarget> target,
                         std::uint64_t tag, bool exempt_from_timeout) {
  note_command(command);
  return connection_->send(command, std::move(target), tag, exempt_from_timeout);
}

bool NodeBoundLink::send_untracked(std::string_view command) {
  note_command(command);
  return connection_->send_untracked(command);
}

void NodeBoundLink::set_unsolicited_target(std::shared_ptr<ReplyTarget> target) {
  follower_ = target ? std::make_shared<Follower>(weak_from_this(), std::move(target)) : nullptr;
  connection_->set_unsolicited_target(follower_);
}

void NodeBoundLink::note_command(std::string_view command) {
  // Only (S)(UN)SUBSCRIBE matter; the name is in the first few bytes ("*2\r\n$10\r\nSSUBSCRIBE").
  const std::string_view head = command.substr(0, 24);
  constexpr std::string_view kTail = "ubscribe";
  bool named = false;
  for (std::size_t i = 0; !named && i + kTail.size() <= head.size(); ++i) {
    named = iequals(head.substr(i, kTail.size()), kTail);
  }
  if (!named) return;
  const auto decoded = resp::decode_reply(command);
  if (!decoded || decoded->elements.empty()) return;
  const auto& name = decoded->elements[0].text;
  if (iequals(name, "ssubscribe")) {
    for (std::size_t i = 1; i < decoded->elements.size(); ++i) {
      shard_channels_.insert(decoded->elements[i].text);
    }
  } else if (iequals(name, "sunsubscribe")) {
    if (decoded->elements.size() == 1) shard_channels_.clear();
    for (std::size_t i = 1; i < decoded->elements.size(); ++i) {
      shard_channels_.erase(decoded->elements[i].text);
    }
  }
}

bool NodeBoundLink::follow_unsolicited(std::string_view message) {
  // The connection framed the message already: only a three-element "sunsubscribe" (RESP2 array
  // or RESP3 push) is decoded again, not every message a subscriber gets.
  constexpr std::string_view kEnded = "3\r\n$12\r\nsunsubscribe\r\n";
  if (shard_channels_.empty() || message.size() <= kEnded.size() ||
      message.substr(1, kEnded.size()) != kEnded) {
    return true;
  }
  const auto decoded = resp::decode_reply(message);
  if (!decoded || decoded->elements.size() != 3 || decoded->elements[0].text != "sunsubscribe") {
    return true;
  }
  const auto& channel = decoded->elements[1].text;
  if (shard_channels_.count(channel) == 0) return true;  // the client's own SUNSUBSCRIBE
  links_.request_refresh(RefreshReason::moved);
  resubscribe(channel, 0);
  return false;
}

void NodeBoundLink::resubscribe(const std::string& channel, int hops) {
  std::string command;
  const std::string_view argv[] = {"SSUBSCRIBE", channel};
  resp::append_command(command, argv);
  // Not through send(): the channel is the client's already.
  connection_->send(command, std::make_shared<Resubscribe>(weak_from_this(), channel, hops), 0,
                    true);
}

bool NodeBoundLink::send_in_session(SessionCommand kind, std::string_view command,
                                    std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
                                    bool exempt_from_timeout) {
  auto guard = std::make_shared<RedirectGuard>(links_, max_redirects_, weak_from_this(), kind,
                                               command, std::move(target));
  return send(command, std::move(guard), tag, exempt_from_timeout);
}

}  // namespace corral::upstream
