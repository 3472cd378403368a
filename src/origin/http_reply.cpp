// RESP replies of the string commands computed from an HTTP body, with Redis's own semantics.
#include "origin/http_reply.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "resp/ascii.hpp"
#include "resp/encoder.hpp"

namespace corral::origin {

namespace {

struct CommandRow {
  std::string_view name;  // lower case, as Redis names it in errors
  StringCommand command;
  std::size_t arity;  // argv size including the command
};

constexpr std::array<CommandRow, 4> kCommands{{{"get", StringCommand::get, 2},
                                               {"exists", StringCommand::exists, 2},
                                               {"strlen", StringCommand::strlen, 2},
                                               {"getrange", StringCommand::getrange, 4}}};

// Redis's string2ll: "0", or an optional '-' and digits without a leading zero.
std::optional<std::int64_t> parse_int(std::string_view text) {
  if (text == "0") return 0;
  const std::string_view digits = text.starts_with('-') ? text.substr(1) : text;
  if (digits.empty() || digits.front() < '1' || digits.front() > '9') return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<StringRequest> parse_string_request(std::span<const std::string_view> argv,
                                                  std::string& error) {
  error.clear();
  if (argv.empty()) {
    resp::append_error(error, "ERR empty command");
    return std::nullopt;
  }
  const auto row = std::find_if(kCommands.begin(), kCommands.end(), [&](const CommandRow& r) {
    return resp::iequals(r.name, argv[0]);
  });
  if (row == kCommands.end()) {
    resp::append_error(error, "ERR corral: an http origin cannot answer '" + std::string(argv[0]) +
                                  "' (GET, EXISTS, STRLEN, GETRANGE only)");
    return std::nullopt;
  }
  if (argv.size() != row->arity) {
    resp::append_error(
        error, "ERR wrong number of arguments for '" + std::string(row->name) + "' command");
    return std::nullopt;
  }
  StringRequest request{row->command, argv[1]};
  if (row->command != StringCommand::getrange) return request;
  const auto start = parse_int(argv[2]);
  const auto end = parse_int(argv[3]);
  if (!start || !end) {
    resp::append_error(error, "ERR value is not an integer or out of range");
    return std::nullopt;
  }
  request.start = *start;
  request.end = *end;
  return request;
}

std::string_view getrange(std::string_view value, std::int64_t start, std::int64_t end) {
  // The order of these steps is Redis's getrangeCommand, quirks included.
  const auto length = static_cast<std::int64_t>(value.size());
  if (start < 0 && end < 0 && start > end) return {};
  if (start < 0) start = std::max<std::int64_t>(length + start, 0);
  if (end < 0) end = std::max<std::int64_t>(length + end, 0);
  if (end >= length) end = length - 1;
  if (start > end || length == 0) return {};
  return value.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start + 1));
}

std::string found_reply(const StringRequest& request, std::string_view body) {
  std::string out;
  switch (request.command) {
    case StringCommand::get:
      resp::append_bulk(out, body);
      break;
    case StringCommand::exists:
      resp::append_integer(out, 1);
      break;
    case StringCommand::strlen:
      resp::append_integer(out, static_cast<std::int64_t>(body.size()));
      break;
    case StringCommand::getrange:
      resp::append_bulk(out, getrange(body, request.start, request.end));
      break;
  }
  return out;
}

std::string_view not_found_reply(const StringRequest& request) {
  switch (request.command) {
    case StringCommand::get:
      return "$-1\r\n";
    case StringCommand::exists:
    case StringCommand::strlen:
      return ":0\r\n";
    case StringCommand::getrange:
      break;
  }
  return "$0\r\n\r\n";
}

}  // namespace corral::origin
