// Redis-style error replies that Corral produces itself, worded like Redis's own.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace corral::proxy {

void append_unknown_command(std::string& out, std::span<const std::string_view> argv);
void append_wrong_arity(std::string& out, std::string_view command);
void append_not_allowed(std::string& out, std::string_view command);
void append_noauth(std::string& out);
// Redis's ACL refusal: the client's upstream user may not run `command` (a table name).
void append_no_permission(std::string& out, std::string_view command);
// A command no route can run (allowed or not): it would change a connection that other clients
// share.
void append_refused(std::string& out, std::string_view command);
// A command Corral answers itself, sent inside MULTI (Redis would queue it with the upstream's
// answer inside EXEC's reply).
void append_local_in_multi(std::string& out, std::string_view command);

}  // namespace corral::proxy
