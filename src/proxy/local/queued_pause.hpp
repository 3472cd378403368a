// CLIENT PAUSE / UNPAUSE queued inside MULTI, as Redis runs them: when EXEC runs, so that the
// transaction's own writes go through and the pause starts at its end. A PING holds the command's
// place in the transaction upstream; EXEC's reply carries the pause's answer in its stead.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/reply_target.hpp"

namespace corral::proxy {

class QueuedPauses {
 public:
  // What Redis receives in the command's place: answered QUEUED, then PONG inside EXEC's reply.
  static constexpr std::string_view kPlaceholder = "*1\r\n$4\r\nPING\r\n";

  // The command at `position` of the transaction (0: the first queued) is CLIENT PAUSE or
  // UNPAUSE with these arguments.
  void add(std::size_t position, std::span<const std::string_view> argv);
  bool empty() const { return queued_.empty(); }
  // Forgets them (the transaction was discarded or lost).
  void clear() { queued_.clear(); }
  // EXEC's target: when EXEC's reply is the transaction's results, runs the queued commands in
  // order and puts their answers in their places. The queue keeps them (an EXEC asked to come
  // again takes them again): clear() once EXEC is sent.
  std::shared_ptr<upstream::ReplyTarget> run_at_exec(
      std::shared_ptr<upstream::ReplyTarget> target) const;

  struct Queued {
    std::size_t position;
    std::vector<std::string> argv;
  };

 private:
  std::vector<Queued> queued_;
};

}  // namespace corral::proxy
