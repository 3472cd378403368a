// The Route/Effect isolation rule over the whole command table: every row has a decision, no
// connection-state command shares a connection, and server-wide commands are refused unless
// allowed or a named exception.
#include "proxy/commands/command_effect.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace corral::proxy {
namespace {

const CommandSpec& row(std::string_view name) {
  for (const CommandSpec& r : all_commands()) {
    if (r.name == name) return r;
  }
  FAIL("no row " << name);
  return all_commands()[0];
}

}  // namespace

TEST_CASE("every built-in row has an effect and obeys the route rule", "[effect]") {
  std::vector<std::string> wrong;
  for (const CommandSpec& r : all_commands()) {
    if (r.effect == Effect::unknown) wrong.push_back(std::string(r.name) + ": effect undecided");
    const std::string_view why = effect_rule_violation(r);
    if (!why.empty()) wrong.push_back(std::string(r.name) + ": " + std::string(why));
  }
  CHECK(wrong == std::vector<std::string>{});
  CHECK(all_commands().size() > 370);  // the whole table, subcommands included
}

TEST_CASE("each named exception is a row that needs it", "[effect]") {
  for (const EffectException& e : connection_commands_on_shared()) {
    INFO(e.name);
    const CommandSpec& r = row(e.name);
    CHECK(r.effect == Effect::connection);
    CHECK(r.route == Route::shared);
    CHECK_FALSE(e.reason.empty());
  }
  for (const EffectException& e : harmless_server_commands()) {
    INFO(e.name);
    const CommandSpec& r = row(e.name);
    CHECK(r.effect == Effect::server);
    CHECK_FALSE((r.flags & kDangerous));
    CHECK(r.route != Route::refused);
    CHECK_FALSE(e.reason.empty());
  }
}

TEST_CASE("the effects the isolation model names", "[effect]") {
  for (std::string_view name :
       {"script|debug",   "client|reply",   "client|no-evict", "client|tracking",
        "client|setname", "client|caching", "readonly",        "readwrite",
        "asking",         "reset",          "select",          "hello",
        "auth",           "quit",           "monitor",         "subscribe",
        "psubscribe",     "ssubscribe",     "multi",           "watch"}) {
    INFO(name);
    CHECK(row(name).effect == Effect::connection);
    CHECK(row(name).route != Route::shared);
  }
  for (std::string_view name :
       {"flushall",       "flushdb",       "swapdb",         "config|set",      "config|rewrite",
        "script|flush",   "script|kill",   "function|flush", "function|delete", "function|restore",
        "function|kill",  "function|load", "script|load",    "cluster|meet",    "cluster|addslots",
        "cluster|reset",  "acl|setuser",   "acl|deluser",    "shutdown",        "client|pause",
        "client|unpause", "client|kill",   "replicaof",      "failover",        "debug",
        "module|load",    "migrate",       "bgsave"}) {
    INFO(name);
    CHECK(row(name).effect == Effect::server);
  }
  for (std::string_view name : {"set", "del", "eval", "fcall", "lpush", "publish", "xadd"}) {
    INFO(name);
    CHECK(row(name).effect == Effect::keys);
  }
  for (std::string_view name : {"get", "ping", "info", "cluster|nodes", "acl|whoami", "time",
                                "client|list", "command|info", "scan", "client"}) {
    INFO(name);
    CHECK(row(name).effect == Effect::reply);
  }
}

// Learned rows share a connection when their flags say they only read keys (learned_commands.cpp):
// that is what "readonly" means for every command of Redis 7.0.
TEST_CASE("every readonly row only reads", "[effect]") {
  for (const CommandSpec& r : all_commands()) {
    if (!(r.flags & kReadOnly)) continue;
    INFO(r.name);
    CHECK(r.effect == Effect::reply);
    CHECK(r.change == StateChange::none);
  }
}

TEST_CASE("the rule refuses what it should", "[effect]") {
  CommandSpec r{"x", 1, 0, 0, 0, 0};
  r.effect = Effect::connection;
  CHECK_FALSE(effect_rule_violation(r).empty());  // shared by default
  r.route = Route::out_of_band;
  CHECK_FALSE(effect_rule_violation(r).empty());
  r.route = Route::blocking_if_argument;
  CHECK_FALSE(effect_rule_violation(r).empty());
  r.route = Route::dedicated;
  CHECK(effect_rule_violation(r).empty());

  r.effect = Effect::server;
  r.route = Route::shared;
  CHECK_FALSE(effect_rule_violation(r).empty());
  r.flags = kDangerous;
  CHECK(effect_rule_violation(r).empty());

  r.effect = Effect::unknown;
  r.flags = 0;
  CHECK_FALSE(effect_rule_violation(r).empty());
  r.route = Route::dedicated;
  CHECK(effect_rule_violation(r).empty());

  // A listed name passes only for the exception it is listed for.
  CommandSpec exec{"exec", 1, 0, 0, 0, 0};
  exec.effect = Effect::connection;
  CHECK(effect_rule_violation(exec).empty());
  exec.effect = Effect::server;
  CHECK_FALSE(effect_rule_violation(exec).empty());
}

}  // namespace corral::proxy
