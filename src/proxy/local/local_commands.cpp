// Commands Corral answers itself, as a table from command row name to handler.
#include "proxy/local/local_commands.hpp"

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>

#include <spdlog/spdlog.h>

#include "proxy/ascii.hpp"
#include "proxy/commands/command_info.hpp"
#include "proxy/commands/command_upstream.hpp"
#include "proxy/links/client_unblock.hpp"
#include "proxy/local/admin_commands.hpp"
#include "proxy/local/client_commands.hpp"
#include "proxy/local/forwarded_pause.hpp"
#include "proxy/local/hot_keys_command.hpp"
#include "proxy/local/monitor_feed.hpp"
#include "proxy/local/script_monitor.hpp"
#include "proxy/local/server_info.hpp"
#include "proxy/local/slowlog_commands.hpp"
#include "proxy/resp3.hpp"
#include "proxy/upstream_user_auth.hpp"
#include "resp/encoder.hpp"
#include "upstream/errors.hpp"
#include "upstream/link.hpp"
#include "upstream/reply_target.hpp"
#include "upstream/server_version.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {
// Redis's default database count; SELECT outside it fails like Redis's would.
constexpr int kDatabases = 16;
constexpr std::string_view kImplementedRedisVersion = "7.0.0";

bool has_argument(std::span<const std::string_view> argv, std::string_view word) {
  return std::any_of(argv.begin() + 1, argv.end(),
                     [word](std::string_view arg) { return iequals(arg, word); });
}

bool parse_int(std::string_view text, long long& value) {
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && !text.empty();
}

// Constant-time comparison: a password check should not leak the matching prefix length.
bool secret_equals(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^
                                       expected[i % std::max<std::size_t>(1, expected.size())]);
  }
  return diff == 0;
}

// Counted always, logged at most once a second: a guesser must not be able to flood the log.
void note_auth_failure(LocalCall& call) {
  static std::atomic<std::int64_t> last_logged_ms{0};
  const auto failures = call.info.auth_failures.fetch_add(1, std::memory_order_relaxed) + 1;
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  auto last = last_logged_ms.load(std::memory_order_relaxed);
  if (now_ms - last < 1000 || !last_logged_ms.compare_exchange_strong(last, now_ms)) return;
  spdlog::warn("client {}: AUTH refused ({} refused since start)", call.client.id, failures);
}

enum class AuthOutcome : std::uint8_t { accepted, refused, pending };

// A client changes identity between commands only (auth() and hello() drained its earlier
// ones), and not while a link of its own holds Redis state logged in as the old identity.
bool release_for_new_identity(LocalCall& call, std::string& error) {
  auto& client = call.client;
  if (client.dedicated && client.mode.holds_connection()) {
    error =
        "ERR Corral cannot change the user of a connection in WATCH, subscribed, tracking or "
        "another stateful mode";
    return false;
  }
  release_dedicated(client);
  return true;
}

// `AUTH user pass` naming an upstream ACL user: the upstream checks it (see docs/security.md).
AuthOutcome authenticate_upstream_user(LocalCall& call, std::string_view user,
                                       std::string_view password, bool named, std::string& error) {
  if (call.user_auth == nullptr) {
    error = named ? "ERR AUTH with a user name is not available here" : kErrNoDefaultPassword;
    return AuthOutcome::refused;
  }
  if (!release_for_new_identity(call, error)) return AuthOutcome::refused;
  switch (call.user_auth->authenticate(call.client, user, password, named,
                                       !call.client_settings.admin_password.empty(), error)) {
    case UserAuthStep::pending:
      return AuthOutcome::pending;
    case UserAuthStep::accepted:
      return AuthOutcome::accepted;
    case UserAuthStep::wrong_password:
      note_auth_failure(call);
      return AuthOutcome::refused;
    case UserAuthStep::refused:
      break;
  }
  return AuthOutcome::refused;
}

// Corral's own passwords answer `AUTH pass` and `AUTH default pass`; without them, and for any
// other named user, the upstream checks the pair, so `AUTH pass` gets Redis's own answer (OK
// when the upstream's `default` has that password, the "no password configured" error when it
// has none).
// `error` gets the message of a refusal.
AuthOutcome authenticate(LocalCall& call, std::string_view user, std::string_view password,
                         bool named, std::string& error) {
  const auto& client = call.client_settings;
  const bool own_passwords = !client.password.empty() || !client.admin_password.empty();
  if (!own_passwords || (named && !iequals(user, "default"))) {
    return authenticate_upstream_user(call, user, password, named, error);
  }
  const bool admin =
      !client.admin_password.empty() && secret_equals(password, client.admin_password);
  const bool ordinary = !client.password.empty() && secret_equals(password, client.password);
  if (!admin && !ordinary) {
    note_auth_failure(call);
    error = "WRONGPASS invalid username-password pair or user is disabled.";
    return AuthOutcome::refused;
  }
  if (!release_for_new_identity(call, error)) return AuthOutcome::refused;
  call.client.user_upstream.reset();
  call.client.upstream_user.clear();
  call.client.authenticated = true;
  call.client.admin = admin || client.admin_password.empty();
  return AuthOutcome::accepted;
}

Action ping(LocalCall& call) {
  if (call.argv.size() > 2) {
    resp::append_error(call.reply, "ERR wrong number of arguments for 'ping' command");
  } else if (call.argv.size() == 1) {
    resp::append_simple(call.reply, "PONG");
  } else {
    resp::append_bulk(call.reply, call.argv[1]);
  }
  return Action::done;
}

Action echo(LocalCall& call) {
  resp::append_bulk(call.reply, call.argv[1]);
  return Action::done;
}

// READONLY, READWRITE, ASKING: Corral itself reads from replicas (upstream.read_from) and follows
// ASK; the client's request for either is granted by what Corral already does.
Action connection_flag(LocalCall& call) {
  resp::append_simple(call.reply, "OK");
  return Action::done;
}

Action quit(LocalCall& call) {
  resp::append_simple(call.reply, "OK");
  return Action::close_after_reply;
}

Action auth(LocalCall& call) {
  if (call.argv.size() > 3) {
    resp::append_error(call.reply, "ERR syntax error");
    return Action::done;
  }
  // The client's earlier commands run as the identity they were sent with.
  if (call.awaiting > 0) return Action::drain_then_retry;
  const bool named = call.argv.size() == 3;
  std::string error;
  switch (authenticate(call, named ? call.argv[1] : "default", call.argv.back(), named, error)) {
    case AuthOutcome::pending:
      return Action::wait_then_retry;
    case AuthOutcome::accepted:
      resp::append_simple(call.reply, "OK");
      break;
    case AuthOutcome::refused:
      resp::append_error(call.reply, error);
      break;
  }
  return Action::done;
}

bool valid_client_name(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c <= '~'; });
}

// Redis's HELLO map: a map in RESP3, the same pairs flat in RESP2.
void append_hello_reply(LocalCall& call) {
  auto& out = call.reply;
  const int protocol = call.client.protocol;
  if (protocol == 3) {
    resp::append_header(out, '%', 7);
  } else {
    resp::append_array_header(out, 14);
  }
  const std::string upstream_version = upstream::known_server_version();
  resp::append_bulk(out, "server");
  resp::append_bulk(out, "redis");
  resp::append_bulk(out, "version");
  resp::append_bulk(
      out, upstream_version.empty() ? std::string(kImplementedRedisVersion) : upstream_version);
  resp::append_bulk(out, "proto");
  resp::append_integer(out, protocol);
  resp::append_bulk(out, "id");
  resp::append_integer(out, static_cast<std::int64_t>(call.client.id));
  resp::append_bulk(out, "mode");
  resp::append_bulk(out, "proxy");
  resp::append_bulk(out, "role");
  resp::append_bulk(out, "master");
  resp::append_bulk(out, "modules");
  resp::append_array_header(out, 0);
}

// A connection holding Redis state for the client (WATCH, CLIENT TRACKING, CLIENT REPLY, a RESP3
// subscription) switches on the spot, as Redis lets a client do: HELLO goes before the client's
// next command there; a RESP3 tracking client then gets its invalidations as pushes, and a RESP3
// subscriber becomes a RESP2 one, whose messages are tunnelled. In RESP2's subscribed mode Redis
// refuses HELLO (the tunnel answers that); inside MULTI it would be queued.
bool switch_held_protocol(LocalCall& call, int protocol) {
  auto& client = call.client;
  if (client.mode.tunneling() || client.mode.in_multi()) {
    resp::append_error(call.reply,
                       "ERR Corral cannot switch the protocol of a subscribed connection or one "
                       "in MULTI");
    return false;
  }
  const std::string hello =
      protocol == 3 ? "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n" : "*2\r\n$5\r\nHELLO\r\n$1\r\n2\r\n";
  if (!client.dedicated->send(hello, std::make_shared<upstream::DiscardTarget>(), 0)) {
    resp::append_error(call.reply, std::string(upstream::kErrStateLost));
    return false;
  }
  if (client.mode.in_pubsub()) {
    client.mode.ended_pushes();
    client.mode.entered_subscriptions();
    client.tunnel_checked = false;  // the next command that is no subscription's asks first
  }
  // Pushes (RESP3) and a tunnel's messages (RESP2) reach the client unsolicited.
  if (call.target != nullptr && (protocol == 3 || client.mode.tunneling())) {
    client.dedicated->set_unsolicited_target(*call.target);
  }
  client.protocol = protocol;
  return true;
}

// Switching protocol changes which upstream connections serve the client: a dedicated one of the
// old protocol goes (hello() drained its replies first), unless Redis keeps state for the client
// there. False, with an error appended, when it cannot switch.
bool switch_protocol(LocalCall& call, int protocol) {
  auto& client = call.client;
  if (protocol == client.protocol) return true;
  if (client.dedicated) {
    if (client.mode.holds_connection()) return switch_held_protocol(call, protocol);
    release_dedicated(client);
  }
  client.protocol = protocol;
  return true;
}

// HELLO [protover [AUTH user pass] [SETNAME name]]
Action hello(LocalCall& call) {
  const auto argv = call.argv;
  int protocol = call.client.protocol;
  if (argv.size() >= 2) {
    long long version = 0;
    if (!parse_int(argv[1], version)) {
      resp::append_error(call.reply, "ERR Protocol version is not an integer or out of range");
      return Action::done;
    }
    if (version != 2 && version != 3) {
      resp::append_error(call.reply, "NOPROTO unsupported protocol version");
      return Action::done;
    }
    protocol = static_cast<int>(version);
  }
  // The client's later commands leave on connections of the new protocol (or user): its earlier
  // ones, on the old connections, must have run first, shared connection or dedicated.
  if ((protocol != call.client.protocol || has_argument(argv, "auth")) && call.awaiting > 0) {
    return Action::drain_then_retry;
  }
  std::string_view new_name;
  bool rename = false;
  for (std::size_t i = 2; i < argv.size(); ++i) {
    if (iequals(argv[i], "auth") && i + 2 < argv.size()) {
      std::string error;
      const auto outcome = authenticate(call, argv[i + 1], argv[i + 2], true, error);
      if (outcome == AuthOutcome::pending) return Action::wait_then_retry;
      if (outcome == AuthOutcome::refused) {
        resp::append_error(call.reply, error);
        return Action::done;
      }
      i += 2;
    } else if (iequals(argv[i], "setname") && i + 1 < argv.size()) {
      new_name = argv[++i];
      rename = true;
    } else {
      resp::append_error(call.reply,
                         "ERR Syntax error in HELLO option '" + std::string(argv[i]) + "'");
      return Action::done;
    }
  }
  if (!call.client.authenticated) {
    resp::append_error(call.reply,
                       "NOAUTH HELLO must be called with the client already authenticated, "
                       "otherwise the HELLO <proto> AUTH <user> <pass> option can be used "
                       "to authenticate the client and select the RESP protocol version at "
                       "the same time");
    return Action::done;
  }
  if (rename) {
    if (!valid_client_name(new_name)) {
      resp::append_error(call.reply,
                         "ERR Client names cannot contain spaces, newlines or special characters.");
      return Action::done;
    }
    call.client.name = new_name;
  }
  if (switch_protocol(call, protocol)) append_hello_reply(call);
  return Action::done;
}

// CORRAL.CLUSTER: the servers and slots Corral routes by, as the upstream reports them.
Action corral_cluster(LocalCall& call) {
  if (!call.client.admin) {
    resp::append_error(call.reply,
                       "NOPERM CORRAL admin commands need AUTH with client.admin_password");
  } else if (call.upstream == nullptr || !call.upstream->report_topology(call.reply)) {
    resp::append_error(call.reply, "ERR the upstream is not a Redis Cluster");
  }
  return Action::done;
}

}  // namespace

int database_index(std::string_view text) {
  long long index = 0;
  return parse_int(text, index) && index >= 0 && index < kDatabases ? static_cast<int>(index) : -1;
}

namespace {

Action select(LocalCall& call) {
  long long index = 0;
  if (!parse_int(call.argv[1], index)) {
    resp::append_error(call.reply, "ERR value is not an integer or out of range");
  } else if (index < 0 || index >= kDatabases) {
    resp::append_error(call.reply, "ERR DB index is out of range");
  } else if (index != 0 && call.upstream != nullptr && !call.upstream->selects_databases()) {
    resp::append_error(call.reply, "ERR SELECT is not allowed in cluster mode");  // Redis's words
  } else {
    call.client.database = static_cast<int>(index);
    resp::append_simple(call.reply, "OK");
  }
  return Action::done;
}

Action client_setname(LocalCall& call) {
  if (!valid_client_name(call.argv[2])) {
    resp::append_error(call.reply,
                       "ERR Client names cannot contain spaces, newlines or special characters.");
    return Action::done;
  }
  call.client.name = call.argv[2];
  resp::append_simple(call.reply, "OK");
  return Action::done;
}

Action client_getname(LocalCall& call) {
  if (call.client.name.empty() && call.client.protocol == kResp3) {
    call.reply.append("_\r\n");  // RESP3's null, as Redis answers a HELLO 3 client
  } else if (call.client.name.empty()) {
    resp::append_null(call.reply);
  } else {
    resp::append_bulk(call.reply, call.client.name);
  }
  return Action::done;
}

// CLIENT REPLY ON|OFF|SKIP: Corral withholds the replies (dispatcher.cpp); Redis never sees it.
Action client_reply(LocalCall& call) {
  const auto word = call.argv[2];
  if (!is_reply_mode_word(word)) {
    resp::append_error(call.reply, "ERR syntax error");
    return Action::done;
  }
  call.client.reply_mode = after_client_reply(call.client.reply_mode, word);
  if (call.client.reply_mode == ReplyMode::on) resp::append_simple(call.reply, "OK");
  return Action::done;
}

Action client_id(LocalCall& call) {
  resp::append_integer(call.reply, static_cast<std::int64_t>(call.client.id));
  return Action::done;
}

// MONITOR: this Corral's clients' commands from now on (proxy/local/monitor_feed.hpp). Replies
// still due come first, so that +OK precedes the first line.
Action monitor(LocalCall& call) {
  if (!call.client.push) {
    resp::append_error(call.reply, "ERR MONITOR needs a client connection");
    return Action::done;
  }
  if (call.awaiting > 0) return Action::drain_then_retry;
  // +OK once the upstream's MONITOR runs, so that the next script's lines are seen.
  if (!call.client.monitoring && call.upstream != nullptr &&
      script_monitor().ensure_running(*call.upstream) == ScriptMonitor::Readiness::starting) {
    return Action::wait_then_retry;
  }
  // An upstream ACL user's right to MONITOR was asked before (Dispatcher::answer_locally).
  if (!call.client.monitoring) monitor_feed().add(call.client.id, call.client.push);
  call.client.monitoring = true;
  resp::append_simple(call.reply, "OK");
  return Action::done;
}

// RESET drops the client's upstream state, so it waits until nothing is in flight.
Action reset(LocalCall& call) {
  if (call.awaiting > 0) return Action::drain_then_retry;
  auto& client = call.client;
  release_dedicated(client);
  if (client.monitoring) monitor_feed().remove(client.id);  // Redis's RESET ends MONITOR too
  client.monitoring = false;
  client.database = 0;
  client.protocol = 2;  // RESET goes back to RESP2, as in Redis
  client.reply_mode = ReplyMode::on;
  client.name.clear();
  client.authenticated = call.client_settings.password.empty();
  client.admin = call.client_settings.admin_password.empty();
  client.user_upstream.reset();  // back to Corral's own upstream user, as Redis goes to default
  client.upstream_user.clear();
  resp::append_simple(call.reply, "RESET");
  return Action::done;
}

struct LocalRow {
  std::string_view name;
  LocalHandler handler;
};

constexpr LocalRow kLocalCommands[] = {
    {"ping", ping},
    {"echo", echo},
    {"quit", quit},
    {"auth", auth},
    {"hello", hello},
    {"select", select},
    {"reset", reset},
    {"monitor", monitor},
    {"readonly", connection_flag},
    {"readwrite", connection_flag},
    {"asking", connection_flag},
    {"client|setname", client_setname},
    {"client|getname", client_getname},
    {"client|id", client_id},
    {"client|reply", client_reply},
    {"client|list", client_list},
    {"client|info", client_info},
    {"client|kill", client_kill},
    {"client|pause", client_pause},
    {"client|unpause", client_unpause},
    {"client|unblock", client_unblock},
    {"command", command_all_upstream},
    {"command|count", command_count_upstream},
    {"command|info", command_info_upstream},
    {"command|list", command_list_upstream},
    {"command|docs", command_docs_upstream},
    {"command|getkeys", command_getkeys_upstream},
    {"command|getkeysandflags", command_getkeys_upstream},
    {"info", info},
    {"corral.info", corral_info},
    {"corral.invalidate", corral_invalidate},
    {"corral.stats", corral_stats},
    {"corral.cluster", corral_cluster},
    {"slowlog|get", slowlog_get},
    {"slowlog|len", slowlog_len},
    {"slowlog|reset", slowlog_reset},
    {"slowlog|help", slowlog_help},
    {"corral.slowlog", corral_slowlog},
    {"corral.hotkeys", corral_hotkeys},
};
}  // namespace

LocalHandler find_local_handler(const CommandSpec& spec) {
  for (const auto& row : kLocalCommands) {
    if (row.name == spec.name) return row.handler;
  }
  return nullptr;
}

}  // namespace corral::proxy
