// A session link of one of the routed upstreams, as the router hands it out: the same link, whose
// servers are named with the upstream's qualifier ("sessions/host:port") so that a command for
// "that server" (CLIENT UNBLOCK) finds its way back through the router.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "upstream/link.hpp"

namespace corral::upstream {

class RouteLink final : public Link {
 public:
  RouteLink(std::shared_ptr<Link> inner, std::size_t upstream, std::string qualifier)
      : inner_(std::move(inner)), upstream_(upstream), qualifier_(std::move(qualifier)) {}

  bool send(std::string_view command, std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
            bool exempt_from_timeout) override {
    return inner_->send(command, std::move(target), tag, exempt_from_timeout);
  }
  bool send_untracked(std::string_view command) override { return inner_->send_untracked(command); }
  void set_unsolicited_target(std::shared_ptr<ReplyTarget> target) override {
    inner_->set_unsolicited_target(std::move(target));
  }
  State state() const override { return inner_->state(); }
  std::size_t in_flight() const override { return inner_->in_flight(); }
  void close() override { inner_->close(); }
  bool send_in_session(SessionCommand kind, std::string_view command,
                       std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
                       bool exempt_from_timeout) override {
    return inner_->send_in_session(kind, command, std::move(target), tag, exempt_from_timeout);
  }
  void follow_connections(ConnectionObserver observer) override {
    inner_->follow_connections(
        [observer = std::move(observer), qualifier = qualifier_](
            Link& connection, std::string server) { observer(connection, qualifier + server); });
  }

  const std::shared_ptr<Link>& inner() const { return inner_; }
  std::size_t upstream() const { return upstream_; }

 private:
  std::shared_ptr<Link> inner_;
  std::size_t upstream_;
  std::string qualifier_;
};

}  // namespace corral::upstream
