// Asking the upstream about a command name the table lacks (COMMAND INFO <name>) before
// answering "unknown command": how a command renamed with rename-command is learned, since
// COMMAND lists it under its original name. One question per name and io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "upstream/upstream.hpp"

namespace corral::proxy {

class CommandLookup {
 public:
  enum class Answer { ask_later, unknown };

  // For a name no lookup finds: ask_later while the upstream is being asked (the request waits,
  // then resolves again), unknown when it does not know the name either (remembered for a while,
  // so a client spraying bad names costs one question per name and period).
  // Asked of the upstream's server (any server of a cluster that answers).
  Answer lookup(std::string_view name, upstream::Upstream& upstream);

  enum class State : std::uint8_t { pending, unknown };
  struct Entry {
    State state;
    std::chrono::steady_clock::time_point at;
  };
  using Table = std::unordered_map<std::string, Entry>;

 private:
  std::shared_ptr<Table> table_ = std::make_shared<Table>();  // shared with replies in flight
};

}  // namespace corral::proxy
