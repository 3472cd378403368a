// The Route/Effect isolation rule and its named exceptions (see command_effect.hpp).
#include "proxy/commands/command_effect.hpp"

#include <algorithm>

namespace corral::proxy {
namespace {

constexpr EffectException kConnectionOnShared[] = {
    {"exec", "ends a transaction, which MULTI opened on a dedicated connection"},
    {"discard", "ends a transaction, which MULTI opened on a dedicated connection"},
    {"unwatch", "ends a WATCH, which only a dedicated connection holds"},
    {"unsubscribe", "ends subscriptions, which only a tunnel holds; unsubscribed, Corral answers"},
    {"punsubscribe", "ends subscriptions, which only a tunnel holds; unsubscribed, Corral answers"},
    {"sunsubscribe", "ends subscriptions, which only a tunnel holds; unsubscribed, Corral answers"},
};

constexpr EffectException kHarmlessServer[] = {
    {"script|load", "adds a script to the cache by its SHA1: changes no data nor other scripts"},
    {"function|load",
     "adds a library (REPLACE redefines one by name, as a new SCRIPT LOAD would): FCALL needs "
     "it; what functions may do is bounded by the upstream user's ACL"},
    {"latency|reset", "clears the latency monitor's samples: diagnostics only"},
    {"memory|purge", "asks the allocator to return free memory to the system"},
    {"client|unblock",
     "answered by Corral for its own clients: unblocks a blocked command, as Redis does"},
    {"slowlog|reset", "answered by Corral: clears its own slowlog, diagnostics only"},
    {"corral.invalidate", "Corral's admin command: needs client.admin_password when set"},
    {"corral.rollover", "Corral's admin command: needs client.admin_password when set"},
    {"corral.purge", "Corral's admin command: needs client.admin_password when set"},
};

bool listed(std::span<const EffectException> list, std::string_view name) {
  return std::any_of(list.begin(), list.end(),
                     [&](const EffectException& e) { return e.name == name; });
}

}  // namespace

std::span<const EffectException> connection_commands_on_shared() { return kConnectionOnShared; }
std::span<const EffectException> harmless_server_commands() { return kHarmlessServer; }

std::string_view effect_rule_violation(const CommandSpec& row) {
  switch (row.effect) {
    case Effect::reply:
    case Effect::keys:
      return {};
    case Effect::connection:
      switch (row.route) {
        case Route::local:
        case Route::dedicated:
        case Route::tunnel:
        case Route::refused:
        case Route::replication:
          return {};
        case Route::shared:
          if (listed(kConnectionOnShared, row.name)) return {};
          return "changes the connection's state but routes to a shared connection";
        case Route::blocking_if_argument:
        case Route::out_of_band:
          return "changes the connection's state but may run on a connection not its own";
      }
      return "has no route";
    case Effect::server:
      if ((row.flags & kDangerous) || row.route == Route::refused ||
          listed(kHarmlessServer, row.name)) {
        return {};
      }
      return "changes the server as a whole but is neither kDangerous nor a listed exception";
    case Effect::unknown:
      if (row.route == Route::dedicated || row.route == Route::refused) return {};
      return "has an unknown effect but may run on a shared connection";
  }
  return "has no effect";
}

}  // namespace corral::proxy
