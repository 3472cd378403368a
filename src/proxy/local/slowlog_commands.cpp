// The slowlog commands: Redis's entry shape (id, unix time, microseconds, arguments, client
// address, client name), and CORRAL.SLOWLOG's, which adds the phases as name/microseconds pairs.
#include "proxy/local/slowlog_commands.hpp"

#include <limits>
#include <string>

#include "proxy/local/admin_commands.hpp"
#include "resp/encoder.hpp"
#include "resp/int_parse.hpp"
#include "slowlog/slow_log.hpp"

namespace corral::proxy {

namespace {
constexpr std::size_t kDefaultCount = 10;  // Redis's SLOWLOG GET default

// SLOWLOG refused: not configured, or the client lacks the admin password.
bool unavailable(LocalCall& call) {
  if (refused_unless_admin(call)) return true;
  if (call.slowlog != nullptr) return false;
  resp::append_error(call.reply, "ERR corral: the slowlog is off (slowlog.enabled: false)");
  return true;
}

// The optional count at argv[index]: Redis's rules (-1: all; below that, or not an integer as
// Redis reads one: error). An argument after it is SLOWLOG GET's wrong number of arguments.
bool read_count(LocalCall& call, std::size_t index, std::size_t& count) {
  count = kDefaultCount;
  if (call.argv.size() <= index) return true;
  if (call.argv.size() > index + 1) {
    if (index == 2) {
      resp::append_error(call.reply, "ERR unknown subcommand or wrong number of arguments for '" +
                                         std::string(call.argv[1]) + "'. Try SLOWLOG HELP.");
    } else {
      resp::append_error(call.reply, "ERR syntax error");
    }
    return false;
  }
  const auto value = resp::parse_integer_argument(call.argv[index]);
  if (!value || *value < -1) {
    resp::append_error(call.reply, "ERR count should be greater than or equal to -1");
    return false;
  }
  count = *value == -1 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(*value);
  return true;
}

void append_redis_fields(std::string& out, const slowlog::SlowEntry& entry) {
  resp::append_integer(out, static_cast<std::int64_t>(entry.id));
  resp::append_integer(out, entry.unix_seconds);
  resp::append_integer(out, static_cast<std::int64_t>(entry.duration_us));
  resp::append_array_header(out, entry.argv.size());
  for (const auto& arg : entry.argv) resp::append_bulk(out, arg);
  resp::append_bulk(out, entry.client_addr);
  resp::append_bulk(out, entry.client_name);
}

Action append_entries(LocalCall& call, std::size_t count_at, bool with_phases) {
  if (unavailable(call)) return Action::done;
  std::size_t count = 0;
  if (!read_count(call, count_at, count)) return Action::done;
  const auto entries = call.slowlog->newest(count);
  resp::append_array_header(call.reply, entries.size());
  for (const auto& entry : entries) {
    resp::append_array_header(call.reply, with_phases ? 7 : 6);
    append_redis_fields(call.reply, entry);
    if (!with_phases) continue;
    resp::append_array_header(call.reply, 2 * slowlog::kPhaseCount);
    for (std::size_t phase = 0; phase < slowlog::kPhaseCount; ++phase) {
      resp::append_bulk(call.reply, slowlog::kPhaseNames[phase]);
      resp::append_integer(call.reply, entry.phases.micros[phase]);
    }
  }
  return Action::done;
}
}  // namespace

Action slowlog_get(LocalCall& call) { return append_entries(call, 2, false); }

Action corral_slowlog(LocalCall& call) { return append_entries(call, 1, true); }

Action slowlog_len(LocalCall& call) {
  if (unavailable(call)) return Action::done;
  resp::append_integer(call.reply, static_cast<std::int64_t>(call.slowlog->size()));
  return Action::done;
}

Action slowlog_reset(LocalCall& call) {
  if (unavailable(call)) return Action::done;
  call.slowlog->reset();
  resp::append_simple(call.reply, "OK");
  return Action::done;
}

Action slowlog_help(LocalCall& call) {
  constexpr std::string_view kLines[] = {
      "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "GET [<count>]",
      "    Return top <count> entries from Corral's slowlog (default: 10, -1 means all).",
      "    Entries are made up of:",
      "    id, timestamp, time in microseconds, arguments array, client IP and port,",
      "    client name",
      "    CORRAL.SLOWLOG [<count>] adds where the time went: queued, cache_lookup,",
      "    coalesced_wait, lock_wait, origin_fetch, upstream (microseconds).",
      "LEN",
      "    Return the length of Corral's slowlog.",
      "RESET",
      "    Reset Corral's slowlog.",
      "The upstream's own slowlog is not merged in: ask the upstream Redis directly.",
      "HELP",
      "    Print this help.",
  };
  resp::append_array_header(call.reply, std::size(kLines));
  for (const auto line : kLines) resp::append_simple(call.reply, line);
  return Action::done;
}

}  // namespace corral::proxy
