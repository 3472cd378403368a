// Commands the upstream knows and the built-in (Redis 7.0) table does not: a newer server's
// commands, renamed commands (rename-command), module commands. Learned from the upstream's
// COMMAND reply (and COMMAND INFO <name>), published as immutable snapshots that every io thread
// reads lock-free through one atomic pointer.
#pragma once

#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proxy/commands/command_table.hpp"

namespace corral::proxy {

class LearnedCommands {
 public:
  // A lower-case name ("getx", "client|no-touch"); nullptr when not learned. No allocation.
  const CommandSpec* find(std::string_view lower_name) const;
  // True when some learned row is a subcommand of `container` (a short list: linear).
  bool has_subcommands_of(std::string_view container) const {
    for (std::string_view c : containers_) {
      if (c == container) return true;
    }
    return false;
  }
  // Every learned row, top-level commands and subcommands, in the upstream's order.
  std::span<const CommandSpec> rows() const { return rows_; }
  // A canonical text of the rows: equal snapshots are not published twice.
  const std::string& signature() const { return signature_; }

  // A snapshot of `rows` (names copied; the first row of a name wins).
  static std::shared_ptr<const LearnedCommands> build(std::span<const CommandSpec> rows);

 private:
  std::deque<std::string> names_;  // stable addresses for the rows' string_views
  std::vector<CommandSpec> rows_;
  std::unordered_map<std::string_view, const CommandSpec*> index_;
  std::vector<std::string_view> containers_;
  std::string signature_;
};

// Reads a COMMAND (or COMMAND INFO) reply: [name, arity, [flags], first, last, step, ...
// [subcommands]] per command. Keeps the commands missing from the built-in table, with the
// upstream's arity, flags (write: invalidates; blocking: a dedicated connection) and key range.
// nullptr when the reply is not such an array (garbage, an error, empty): the built-in table then
// stays in force alone.
std::shared_ptr<const LearnedCommands> learn_commands(std::string_view reply);

// Makes `learned` visible to every lookup (find_command, find_subcommand, COMMAND ...), added to
// what was learned before. A published snapshot is never freed, as requests hold pointers to its
// rows; one equal to the current one is not published again, so only a changed upstream adds one.
void publish_learned_commands(std::shared_ptr<const LearnedCommands> learned);

// A reply to `COMMAND INFO <name>` for a name the table lacks: a renamed command (rename-command
// keeps the original name in COMMAND's reply, so only asking by the new name finds it). Publishes
// it under `name` (its subcommands under `name|sub`) with the original's row, a local one refused;
// false when the upstream does not know it either.
bool learn_command_info(std::string_view reply, std::string_view name);
// The current snapshot, or nullptr before any was published. One atomic load.
const LearnedCommands* learned_commands();

// True for rows of the built-in table (all_commands()).
bool is_builtin(const CommandSpec& spec);

}  // namespace corral::proxy
