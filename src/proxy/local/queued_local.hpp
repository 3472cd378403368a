// Commands Corral answers itself, queued inside MULTI as Redis queues them, to run when EXEC
// runs the transaction. A PING holds each one's place in the transaction upstream (CLIENT PAUSE /
// UNPAUSE go as themselves: Redis's pause is part of the transaction and starts at its end; INFO
// and COMMAND too, on an upstream of one server, and Corral merges its part into Redis's answer);
// the client gets +QUEUED, and EXEC's reply carries their answers in their places. Nothing of
// them runs when EXEC is aborted or a WATCH fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "upstream/reply_target.hpp"

namespace corral::proxy {

// Runs a queued command for its client (the ClientSession, while it lives).
class QueuedLocalRunner {
 public:
  // A command that a placeholder stood for: runs it now and appends its one reply to `answer`.
  virtual void run_queued(std::span<const std::string_view> argv, std::string& answer) = 0;
  // A command Redis ran as itself within EXEC: Corral's own part of it, `taken` when its element
  // of EXEC's reply is no error.
  virtual void ran_in_exec(std::span<const std::string_view> argv, bool taken) = 0;
  // A command Redis answered within EXEC (`upstream_answer`, no error) into which Corral merges
  // its own part: appends the merged reply to `answer`.
  virtual void merge_queued(std::span<const std::string_view> argv,
                            std::string_view upstream_answer, std::string& answer) = 0;
  // EXEC's outcome has come (after the commands ran, before the client gets the reply).
  virtual void exec_answered() = 0;

 protected:
  ~QueuedLocalRunner() = default;
};

class QueuedLocalCommands {
 public:
  // What Redis receives in a command's place: answered QUEUED, then PONG inside EXEC's reply.
  static constexpr std::string_view kPlaceholder = "*1\r\n$4\r\nPING\r\n";

  // How a queued command reached the transaction upstream.
  enum class Kind : std::uint8_t {
    placeholder,  // as kPlaceholder; Corral answers it at EXEC (run_queued)
    forwarded,    // as itself; Corral runs its own part at EXEC (ran_in_exec)
    merged,       // as itself; Corral merges its part into Redis's answer (merge_queued)
  };

  // The command at `position` of the transaction (0: the first queued) has these arguments.
  void add(std::size_t position, std::span<const std::string_view> argv, Kind kind);
  bool empty() const { return queued_.empty(); }
  // Forgets them (the transaction was discarded or lost).
  void clear() { queued_.clear(); }
  // EXEC's target: when EXEC's reply is the transaction's results, runs the queued commands in
  // order through `runner` (nothing when it is gone: so is the client) and puts the answers of
  // the placeholders' in their places. The queue keeps them (an EXEC asked to come again takes
  // them again): clear() once EXEC is sent.
  std::shared_ptr<upstream::ReplyTarget> run_at_exec(std::shared_ptr<upstream::ReplyTarget> target,
                                                     std::weak_ptr<QueuedLocalRunner> runner) const;

  struct Queued {
    std::size_t position;
    std::vector<std::string> argv;
    Kind kind;
  };

 private:
  std::vector<Queued> queued_;
};

}  // namespace corral::proxy
