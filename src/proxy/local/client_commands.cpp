// CLIENT subcommands that act on the clients of Corral, answered as Redis answers them.
#include "proxy/local/client_commands.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "proxy/ascii.hpp"
#include "proxy/local/client_registry.hpp"
#include "proxy/local/function_flags.hpp"
#include "resp/encoder.hpp"
#include "resp/int_parse.hpp"
#include "upstream/errors.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {
constexpr std::string_view kSyntaxError = "ERR syntax error";

// Redis's string2ll: no '+', no leading zeros, no spaces.
bool parse_integer(std::string_view text, long long& value) {
  const auto parsed = resp::parse_integer_argument(text);
  if (parsed) value = *parsed;
  return parsed.has_value();
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

bool valid_type(std::string_view type) {
  return iequals(type, "normal") || iequals(type, "pubsub") || iequals(type, "master") ||
         iequals(type, "replica") || iequals(type, "slave");
}

// CLIENT KILL's filters as name/value pairs from argv[2]; an error text, or empty.
std::string parse_kill_filter(const LocalCall& call, ClientFilter& filter) {
  const auto argv = call.argv;
  if ((argv.size() - 2) % 2 != 0) return std::string(kSyntaxError);
  filter.skip_id = call.client.id;  // SKIPME defaults to yes
  for (std::size_t i = 2; i + 1 < argv.size(); i += 2) {
    const std::string_view name = argv[i];
    const std::string_view value = argv[i + 1];
    long long number = 0;
    if (iequals(name, "id")) {
      if (!parse_integer(value, number) || number <= 0) {
        return "ERR client-id should be greater than 0";
      }
      filter.ids.push_back(static_cast<std::uint64_t>(number));
    } else if (iequals(name, "addr")) {
      filter.addr = value;
    } else if (iequals(name, "laddr")) {
      filter.laddr = value;
    } else if (iequals(name, "user")) {
      filter.user = value;
    } else if (iequals(name, "type")) {
      if (!valid_type(value)) return "ERR Unknown client type '" + std::string(value) + "'";
      filter.type = lower(value);
    } else if (iequals(name, "skipme")) {
      if (!iequals(value, "yes") && !iequals(value, "no")) return std::string(kSyntaxError);
      filter.skip_id = iequals(value, "yes") ? call.client.id : 0;
    } else if (iequals(name, "maxage")) {
      if (!parse_integer(value, number) || number < 0) return std::string(kSyntaxError);
      filter.max_age_seconds = number;
    } else {
      return std::string(kSyntaxError);
    }
  }
  // "slave" is Redis's old name for "replica".
  if (filter.type == "slave") filter.type = "replica";
  return {};
}
// CLIENT KILL USER name, for a user other than "default": the clients that authenticated as that
// upstream ACL user, but whether the user exists is the upstream's to say, and Redis answers an
// error for one that does not. ACL DRYRUN answers an error only for a missing user (or -NOPERM
// when Corral's own user may not run it: then the matching clients, as for an existing user).
// The caller, when it matches (SKIPME no), is counted here and closed after its reply: the others
// are killed when the answer comes.
Action kill_upstream_user(LocalCall& call, const ClientFilter& filter, bool kills_self) {
  const std::string& user = filter.user;
  std::string dryrun;
  const std::string_view argv[] = {"ACL", "DRYRUN", user, "PING"};
  resp::append_command(dryrun, argv);
  auto answer = upstream::CallbackTarget::make([target = *call.target, tag = call.tag, filter,
                                                kills_self](std::string_view reply, bool failed) {
    if (failed) return target->on_failure(tag, reply);
    std::string out;
    if (reply.starts_with("-ERR")) {
      resp::append_error(out, "ERR No such user '" + filter.user + "'");
    } else {
      const std::size_t killed = client_registry().kill(filter) + (kills_self ? 1 : 0);
      resp::append_integer(out, static_cast<std::int64_t>(killed));
    }
    target->on_reply(tag, out);
  });
  call.deferred = true;
  if (!call.upstream->ask_server(dryrun, call.tag, answer)) {
    (*call.target)->on_failure(call.tag, upstream::kErrUnavailable);
    return Action::done;
  }
  return kills_self ? Action::close_after_reply : Action::done;
}
}  // namespace

namespace {
// The caller's own buffers as they are now, its request's bytes included, as Redis shows them;
// the other clients' as of their last read or write.
void show_own_buffers(const LocalCall& call) {
  if (const auto self = client_registry().find(call.client.id); self && self->show_buffers) {
    self->show_buffers();
  }
}
}  // namespace

// CLIENT LIST [TYPE normal|master|replica|pubsub | ID id ...], parsed as Redis 7.0 does: one
// filter or the other; with IDs, a line per ID that names a client, in their order (repeated
// when repeated).
Action client_list(LocalCall& call) {
  ClientFilter filter;
  const auto argv = call.argv;
  std::vector<std::uint64_t> ids;
  bool by_id = false;
  if (argv.size() == 4 && iequals(argv[2], "type")) {
    if (!valid_type(argv[3])) {
      resp::append_error(call.reply, "ERR Unknown client type '" + std::string(argv[3]) + "'");
      return Action::done;
    }
    filter.type = lower(argv[3]);
    if (filter.type == "slave") filter.type = "replica";
  } else if (argv.size() > 3 && iequals(argv[2], "id")) {
    for (std::size_t i = 3; i < argv.size(); ++i) {
      const auto number = resp::parse_integer_argument(argv[i]);
      if (!number) {
        resp::append_error(call.reply, "ERR Invalid client ID");
        return Action::done;
      }
      if (*number > 0) ids.push_back(static_cast<std::uint64_t>(*number));
    }
    by_id = true;
  } else if (argv.size() != 2) {
    resp::append_error(call.reply, kSyntaxError);
    return Action::done;
  }
  show_own_buffers(call);
  if (!by_id) {
    resp::append_text(call.reply, client_registry().list(filter), call.client.protocol);
    return Action::done;
  }
  std::string lines;
  for (const auto id : ids) {
    filter.ids = {id};
    lines += client_registry().list(filter);
  }
  resp::append_text(call.reply, lines, call.client.protocol);
  return Action::done;
}

Action client_info(LocalCall& call) {
  show_own_buffers(call);
  resp::append_text(call.reply, client_registry().info(call.client.id), call.client.protocol);
  return Action::done;
}

// CLIENT KILL addr:port (the old form: OK or an error), or CLIENT KILL <filter value> ...
// (the number killed). The caller itself is answered first, then disconnected, as Redis does.
Action client_kill(LocalCall& call) {
  ClientFilter filter;
  const bool old_form = call.argv.size() == 3;
  if (old_form) {
    filter.addr = call.argv[2];
  } else if (const auto error = parse_kill_filter(call, filter); !error.empty()) {
    resp::append_error(call.reply, error);
    return Action::done;
  }
  ClientFilter self = filter;
  self.ids = {call.client.id};
  self.skip_id = 0;
  const bool kills_self = (filter.ids.empty() || std::find(filter.ids.begin(), filter.ids.end(),
                                                           call.client.id) != filter.ids.end()) &&
                          filter.skip_id != call.client.id && !client_registry().list(self).empty();
  filter.skip_id = call.client.id;
  if (!filter.user.empty() && filter.user != "default" && call.upstream != nullptr &&
      call.target != nullptr) {
    return kill_upstream_user(call, filter, kills_self);
  }
  const std::size_t killed = client_registry().kill(filter) + (kills_self ? 1 : 0);
  if (old_form) {
    if (killed == 0) {
      resp::append_error(call.reply, "ERR No such client");
    } else {
      resp::append_simple(call.reply, "OK");
    }
  } else {
    resp::append_integer(call.reply, static_cast<std::int64_t>(killed));
  }
  return kills_self ? Action::close_after_reply : Action::done;
}

// CLIENT PAUSE timeout [WRITE|ALL], checked as Redis checks it (the mode first), with its errors.
std::optional<PauseRequest> parse_pause(std::span<const std::string_view> argv,
                                        std::string& error) {
  if (argv.size() > 4) {
    resp::append_error(error, "ERR unknown subcommand or wrong number of arguments for '" +
                                  std::string(argv[1]) + "'. Try CLIENT HELP.");
    return std::nullopt;
  }
  bool all = true;
  if (argv.size() == 4) {
    if (iequals(argv[3], "write")) {
      all = false;
    } else if (!iequals(argv[3], "all")) {
      resp::append_error(error, "ERR CLIENT PAUSE mode must be WRITE or ALL");
      return std::nullopt;
    }
  }
  long long ms = 0;
  if (!parse_integer(argv[2], ms)) {
    resp::append_error(error, "ERR timeout is not an integer or out of range");
    return std::nullopt;
  }
  if (ms < 0) {
    resp::append_error(error, "ERR timeout is negative");
    return std::nullopt;
  }
  // A year is "until CLIENT UNPAUSE"; larger values would overflow the clock's nanoseconds.
  constexpr long long kMaxPauseMs = 365LL * 24 * 3600 * 1000;
  return PauseRequest{std::chrono::milliseconds(std::min(ms, kMaxPauseMs)), all};
}

// Corral holds its clients' commands (all, or the writes) until the end; held requests then run
// in the order they came.
void pause_clients(const PauseRequest& pause, upstream::Upstream* upstream) {
  client_registry().pause(std::chrono::steady_clock::now() + pause.timeout, pause.all);
  // FCALL of a function that declares no-writes runs through a WRITE pause: which ones do.
  if (!pause.all && upstream != nullptr) learn_function_flags(*upstream);
}

void unpause_clients() { client_registry().unpause(); }

}  // namespace corral::proxy
