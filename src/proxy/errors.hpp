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

}  // namespace corral::proxy
