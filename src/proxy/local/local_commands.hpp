// Commands Corral answers itself: PING ECHO QUIT HELLO AUTH SELECT CLIENT COMMAND INFO RESET.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "config/settings.hpp"
#include "metrics/process_info.hpp"
#include "proxy/client_state.hpp"
#include "proxy/commands/command_table.hpp"
#include "proxy/dispatcher.hpp"

namespace corral::upstream {
class KeyedCaller;
class Upstream;
}  // namespace corral::upstream
namespace corral::stampede {
class CacheRuntime;
class HotKeys;
}  // namespace corral::stampede
namespace corral::slowlog {
class SlowLog;
}

namespace corral::proxy {

class UpstreamUserAuth;

struct LocalCall {
  ClientState& client;
  std::span<const std::string_view> argv;
  const config::Settings& settings;
  const config::ClientSettings& client_settings;  // the reloaded ones (not settings.client)
  ProcessInfo& info;
  std::size_t awaiting;  // the client's requests still waiting for a reply
  std::string& reply;    // the handler appends one RESP reply (unless it asks to drain first)
  stampede::CacheRuntime* cache;  // the process's cache (CORRAL.* commands)
  // For handlers that must ask the upstream (INFO) or another thread (CLIENT KILL): they answer
  // slot `tag` of `*target` themselves, later, and set `deferred` (then `reply` is unused).
  upstream::Upstream* upstream = nullptr;
  std::uint64_t tag = 0;
  const std::shared_ptr<upstream::ReplyTarget>* target = nullptr;
  bool deferred = false;
  // Inside EXEC's reply: Redis's answer to this command, already given (kMergedAtExec rows). The
  // handler merges Corral's part into it rather than asking the upstream.
  std::optional<std::string_view> upstream_answer = std::nullopt;
  upstream::KeyedCaller* keyed = nullptr;  // Corral's own keys (tag counts): by slot on a cluster
  slowlog::SlowLog* slowlog = nullptr;     // null when slowlog.enabled is false
  stampede::HotKeys* hot_keys = nullptr;   // null when hot_keys.detect is false
  UpstreamUserAuth* user_auth = nullptr;   // AUTH as an upstream ACL user (null: refused)
};

using LocalHandler = Action (*)(LocalCall&);

// SELECT's argument as Redis accepts it (an integer from 0 to 15), else -1.
int database_index(std::string_view text);

// The handler for a table row, or nullptr when the row is forwarded upstream after all.
LocalHandler find_local_handler(const CommandSpec& spec);

}  // namespace corral::proxy
