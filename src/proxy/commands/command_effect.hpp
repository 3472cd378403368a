// The isolation rule that ties a command's Route to its Effect (command_table.hpp), with the few
// named exceptions to it and their reasons. A unit test holds every row of the table to it.
#pragma once

#include <span>
#include <string_view>

#include "proxy/commands/command_table.hpp"

namespace corral::proxy {

struct EffectException {
  std::string_view name;    // a row of the table
  std::string_view reason;  // why the rule does not apply to it
};

// Connection-state commands allowed a shared connection: they only end state that a
// session-bound connection holds, and a shared connection never has it.
std::span<const EffectException> connection_commands_on_shared();

// Server-wide commands that are not kDangerous, and why they may run unless refused by the
// upstream's ACL.
std::span<const EffectException> harmless_server_commands();

// Empty when `row` obeys the rule:
//  - `connection`: Route is local, dedicated, tunnel, control or refused (never shared, nor
//    out_of_band or blocking_if_argument, which share connections too);
//  - `server`: kDangerous (refused unless client.allow_commands lists it), or refused, or in
//    harmless_server_commands();
//  - `unknown`: only learned rows, on a session-bound connection (dedicated) or refused.
// Otherwise a sentence saying what is wrong.
std::string_view effect_rule_violation(const CommandSpec& row);

}  // namespace corral::proxy
