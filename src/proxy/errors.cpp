// Redis-style error replies that Corral produces itself.
#include "proxy/errors.hpp"

#include <algorithm>

#include "resp/encoder.hpp"

namespace corral::proxy {

namespace {
// Redis quotes at most this much of a client's argument back at it.
constexpr std::size_t kQuotedArgumentMax = 128;

void append_lowered(std::string& out, std::string_view text) {
  for (char c : text) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
}

// Error lines cannot hold CR or LF: Redis replaces them with spaces.
void append_line_safe(std::string& out, std::string_view text) {
  for (char c : text.substr(0, std::min(text.size(), kQuotedArgumentMax))) {
    out.push_back(c == '\r' || c == '\n' ? ' ' : c);
  }
}
}  // namespace

void append_unknown_command(std::string& out, std::span<const std::string_view> argv) {
  std::string message = "ERR unknown command '";
  append_line_safe(message, argv[0]);
  message += "', with args beginning with: ";
  for (std::size_t i = 1; i < argv.size() && message.size() < 512; ++i) {
    message += '\'';
    append_line_safe(message, argv[i]);
    message += "' ";
  }
  resp::append_error(out, message);
}

void append_wrong_arity(std::string& out, std::string_view command) {
  std::string message = "ERR wrong number of arguments for '";
  append_lowered(message, command);
  message += "' command";
  resp::append_error(out, message);
}

void append_not_allowed(std::string& out, std::string_view command) {
  std::string message = "ERR command '";
  append_lowered(message, command);
  message += "' is not allowed through this proxy (see client.allow_commands)";
  resp::append_error(out, message);
}

void append_no_permission(std::string& out, std::string_view command) {
  std::string message = "NOPERM this user has no permissions to run the '";
  append_lowered(message, command);
  message += "' command";
  resp::append_error(out, message);
}

void append_refused(std::string& out, std::string_view command) {
  std::string message = "ERR command '";
  append_lowered(message, command);
  message +=
      "' is refused by this proxy: it would change an upstream connection that other "
      "clients share";
  resp::append_error(out, message);
}

void append_local_in_multi(std::string& out, std::string_view command) {
  std::string message = "ERR command '";
  append_lowered(message, command);
  message +=
      "' is answered by this proxy and cannot be queued inside MULTI; send it outside the "
      "transaction";
  resp::append_error(out, message);
}

void append_noauth(std::string& out) { resp::append_error(out, "NOAUTH Authentication required."); }

}  // namespace corral::proxy
