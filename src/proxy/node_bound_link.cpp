// The redirect guard of a node-bound connection. Redis Cluster clients (redis-py, ioredis) see
// -MOVED inside a transaction and EXECABORT at EXEC, refresh their map and retry the whole
// transaction; a client of Corral does not know the cluster, so it gets the same outcome in words
// it understands (an error naming the move, EXECABORT) while Corral refreshes for it. A blocking
// command has no state to lose: it is simply sent again to the new owner, as redis-py does.
#include "proxy/node_bound_link.hpp"

#include <fmt/format.h>

#include <string>

#include "proxy/cluster_router.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"
#include "upstream/redirect.hpp"

namespace corral::proxy {

namespace {

constexpr std::string_view kAsking = "*1\r\n$6\r\nASKING\r\n";

// ASKING's +OK is nobody's reply.
class Discard final : public upstream::ReplyTarget {
 public:
  void on_reply(std::uint64_t, std::string_view) override {}
  void on_failure(std::uint64_t, std::string_view) override {}
};

class RedirectGuard final : public upstream::ReplyTarget,
                            public std::enable_shared_from_this<RedirectGuard> {
 public:
  RedirectGuard(ClusterRouter& router, std::shared_ptr<NodeBoundLink> link, BoundCommand kind,
                std::string_view command, int protocol,
                std::shared_ptr<upstream::ReplyTarget> target)
      : router_(router),
        link_(std::move(link)),
        kind_(kind),
        command_(kind == BoundCommand::blocking ? std::string(command) : std::string()),
        protocol_(protocol),
        target_(std::move(target)) {}

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    const auto redirect =
        reply.empty() || reply.front() != '-' ? std::nullopt : upstream::read_redirect(reply);
    if (!redirect) return target_->on_reply(tag, reply);
    const int node = note(*redirect);
    if (kind_ == BoundCommand::blocking && hops_ < router_.max_redirects() && node >= 0 &&
        retry_on(node, redirect->moved, tag)) {
      return;
    }
    std::string error;
    const auto moved =
        fmt::format("slot {} moved to {}:{}", redirect->slot, redirect->to.host, redirect->to.port);
    resp::append_error(
        error, kind_ == BoundCommand::exec
                   ? fmt::format("EXECABORT Transaction discarded: its {}; retry it", moved)
                   : fmt::format("ERR the {} during the session; retry the transaction", moved));
    target_->on_reply(tag, error);
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    target_->on_failure(tag, error);
  }

 private:
  // Routes the slot by the redirect from now on (MOVED), counts it; the node's index or -1.
  int note(const upstream::Redirect& redirect) {
    auto& links = router_.links();
    auto& routes = links.routes();
    const int node = routes.find_or_add(redirect.to);
    if (redirect.moved) {
      links.counters().redirected(upstream::RedirectKind::moved);
      routes.owner[redirect.slot] = static_cast<std::int16_t>(node);
      links.request_refresh(upstream::RefreshReason::moved);
    } else {
      links.counters().redirected(upstream::RedirectKind::ask);
    }
    return node;
  }

  bool retry_on(int node, bool moved, std::uint64_t tag) {
    ++hops_;
    auto next = router_.links().dedicated_node_link(node, protocol_);
    if (!next) return false;
    link_->replace(next);
    if (!moved && !link_->send(kAsking, std::make_shared<Discard>(), 0, false)) return false;
    return link_->send(command_, shared_from_this(), tag, true);
  }

  ClusterRouter& router_;
  std::shared_ptr<NodeBoundLink> link_;
  BoundCommand kind_;
  std::string command_;  // blocking commands only: what a retry sends again
  int protocol_;
  std::shared_ptr<upstream::ReplyTarget> target_;
  int hops_ = 0;
};

}  // namespace

void NodeBoundLink::replace(std::shared_ptr<upstream::Link> next) {
  connection_->set_unsolicited_target(nullptr);
  connection_->close();
  connection_ = std::move(next);
  if (unsolicited_) connection_->set_unsolicited_target(unsolicited_);
}

bool send_on_node(ClusterRouter& router, const std::shared_ptr<NodeBoundLink>& link,
                  BoundCommand kind, std::string_view command, int protocol, std::uint64_t tag,
                  const std::shared_ptr<upstream::ReplyTarget>& target, bool exempt_from_timeout) {
  auto guard = std::make_shared<RedirectGuard>(router, link, kind, command, protocol, target);
  return link->send(command, std::move(guard), tag, exempt_from_timeout);
}

}  // namespace corral::proxy
