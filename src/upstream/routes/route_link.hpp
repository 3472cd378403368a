// A session link of one of the routed upstreams, as the router hands it out: the same link, whose
// servers are named with the upstream's qualifier ("sessions/host:port") so that a command for
// "that server" (CLIENT UNBLOCK) finds its way back through the router, and whose database a
// client's SELECT does not move when the upstream is a named one.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "upstream/link.hpp"

namespace corral::upstream {

class RouteLink final : public Link {
 public:
  // `own_database`: a named upstream's database, which a client's SELECT (meant for the default
  // upstream) must not change; kClientsDatabase on the default upstream's links.
  static constexpr int kClientsDatabase = -1;
  RouteLink(std::shared_ptr<Link> inner, std::size_t upstream, std::string qualifier,
            int own_database)
      : inner_(std::move(inner)),
        upstream_(upstream),
        qualifier_(std::move(qualifier)),
        own_database_(own_database) {}

  bool send(std::string_view command, std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
            bool exempt_from_timeout) override {
    return inner_->send(kept_in_database(command), std::move(target), tag, exempt_from_timeout);
  }
  bool send_untracked(std::string_view command) override { return inner_->send_untracked(command); }
  void set_unsolicited_target(std::shared_ptr<ReplyTarget> target) override {
    inner_->set_unsolicited_target(std::move(target));
  }
  State state() const override { return inner_->state(); }
  bool reached_server() const override { return inner_->reached_server(); }
  std::size_t in_flight() const override { return inner_->in_flight(); }
  void close() override { inner_->close(); }
  bool send_in_session(SessionCommand kind, std::string_view command,
                       std::shared_ptr<ReplyTarget> target, std::uint64_t tag,
                       bool exempt_from_timeout) override {
    return inner_->send_in_session(kind, kept_in_database(command), std::move(target), tag,
                                   exempt_from_timeout);
  }
  void follow_connections(ConnectionObserver observer) override {
    inner_->follow_connections(
        [observer = std::move(observer), qualifier = qualifier_](
            Link& connection, std::string server) { observer(connection, qualifier + server); });
  }

  bool start_raw_relay() override { return inner_->start_raw_relay(); }
  RelayState relay_state() const override { return inner_->relay_state(); }
  void hold_raw_relay(bool held) override { inner_->hold_raw_relay(held); }
  bool hold_relay_input(std::size_t limit, std::function<void()> resume) override {
    return inner_->hold_relay_input(limit, std::move(resume));
  }

  const std::shared_ptr<Link>& inner() const { return inner_; }
  std::size_t upstream() const { return upstream_; }

  // A client's `SELECT n` on a named upstream's link becomes `SELECT <its database>`: still
  // answered in order on the link (and queued in a MULTI), without moving the link's keys to
  // database n. An index Corral would not accept (0..15) passes on for Redis's own error.
  std::string_view kept_in_database(std::string_view command) {
    if (own_database_ == kClientsDatabase || !is_valid_select(command)) return command;
    const std::string index = std::to_string(own_database_);
    rewritten_ = "*2\r\n$6\r\nSELECT\r\n$" + std::to_string(index.size()) + "\r\n" + index + "\r\n";
    return rewritten_;
  }

 private:
  static bool is_valid_select(std::string_view command) {
    constexpr std::string_view kHead = "*2\r\n$6\r\n";
    if (!command.starts_with(kHead) || command.size() < kHead.size() + 8) return false;
    const std::string_view name = command.substr(kHead.size(), 6);
    for (std::size_t i = 0; i < name.size(); ++i) {
      if ((name[i] | 0x20) != "select"[i]) return false;
    }
    // "\r\n$<len>\r\n<digits>\r\n": one or two digits, below 16 (Corral's database_index).
    const std::string_view rest = command.substr(kHead.size() + 6);
    std::string_view digits;
    if (rest.starts_with("\r\n$1\r\n")) digits = rest.substr(6, 1);
    if (rest.starts_with("\r\n$2\r\n")) digits = rest.substr(6, 2);
    if (digits.empty() || rest.size() != 6 + digits.size() + 2 || !rest.ends_with("\r\n"))
      return false;
    int index = 0;
    for (const char c : digits) {
      if (c < '0' || c > '9') return false;
      index = index * 10 + (c - '0');
    }
    return index < 16;
  }

  std::shared_ptr<Link> inner_;
  std::size_t upstream_;
  std::string qualifier_;
  int own_database_;
  std::string rewritten_;  // the last rewritten SELECT, alive while the inner link copies it
};

}  // namespace corral::upstream
