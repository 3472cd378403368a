// The Redis 7.0 command table as data: arity, flags and key positions of every command, plus
// Corral's route, connection-state and effect columns. Lookups are case-insensitive and allocate
// nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace corral::proxy {

enum CommandFlag : std::uint32_t {
  kWrite = 1u << 0,  // modifies data: cached entries of its keys are invalidated
  kReadOnly = 1u << 1,
  kAdmin = 1u << 2,
  kBlocking = 1u << 3,     // may block the connection (BLPOP, XREAD BLOCK, WAIT ...)
  kPubSub = 1u << 4,       // enters or works in subscribed mode
  kTransaction = 1u << 5,  // MULTI EXEC DISCARD WATCH UNWATCH
  kDangerous = 1u << 6,    // refused unless listed in client.allow_commands
  kNoAuth = 1u << 8,       // allowed before AUTH (AUTH, HELLO, QUIT)
  kMovableKeys = 1u << 9,  // key positions depend on arguments (EVAL numkeys, XREAD STREAMS ...)
  kFast = 1u << 10,
  kLoading = 1u << 11,
  kStale = 1u << 12,
  kDeletesKeys = 1u << 13,  // only removes its keys (DEL UNLINK): allowed where writes are refused
  kFlushesAll = 1u << 14,   // empties or swaps databases (FLUSHDB FLUSHALL SWAPDB): the cache goes
  kQueuedInMulti = 1u << 15,  // a local row Redis answers alike: queued inside MULTI (PING ...)
  kRunsScript = 1u << 16,     // runs or loads server-side code: refused with client.refuse_scripts
  kMayReplicate =
      1u << 17,  // Redis's may_replicate (PUBLISH PFCOUNT EVAL ...): CLIENT PAUSE WRITE holds it
  // A local row Corral runs when EXEC runs it, queued inside MULTI (queued_local.hpp): with
  // kQueuedInMulti too it goes upstream as itself, else a placeholder holds its place.
  kRunsAtExec = 1u << 18,
  // A local row whose answer is the upstream's with Corral's part merged in (INFO, COMMAND):
  // inside MULTI, on an upstream of one server, it goes upstream as itself and Corral merges its
  // part into its element of EXEC's reply (queued_local.hpp).
  kMergedAtExec = 1u << 19,
};

// Where a command is sent. A cluster adds "keyed by slot", "split by slot" and "broadcast" here.
enum class Route : std::uint8_t {
  shared,                // any of the io thread's shared connections
  local,                 // answered by Corral itself (unless Redis must see it: inside MULTI ...)
  dedicated,             // the client's own connection: Redis keeps state for it, or it blocks
  blocking_if_argument,  // dedicated with a BLOCK argument, else shared (XREAD XREADGROUP)
  tunnel,                // dedicated, then every reply is unsolicited (SUBSCRIBE MONITOR ...)
  out_of_band,           // a new connection at once: it must not queue behind a busy server
  refused,               // nowhere: it would change a connection other clients share
  // The client's own connection, which SYNC/PSYNC then make a raw byte relay (REPLCONF before
  // them runs there too): a replica's handshake and stream (proxy/dispatcher_replication.cpp).
  replication,
};

// What a command does to the state Redis keeps for the client's connection; the proxy's
// ConnectionMode (client_state.hpp) follows these.
enum class StateChange : std::uint8_t {
  none,
  multi,    // enters a transaction
  exec,     // ends it (and any WATCH); aborts it when Corral refused a queued command
  discard,  // ends it (and any WATCH)
  watch,
  unwatch,
  tracking,    // CLIENT TRACKING ON|OFF
  no_evict,    // CLIENT NO-EVICT: keeps the connection until the client leaves
  monitor,     // tunnel until the client leaves
  reply_mode,  // CLIENT REPLY ON|OFF|SKIP: which replies Corral withholds (proxy/reply_mode.hpp)
  subscribe,   // subscribed until the last subscription ends
  select,      // changes the database
  quit,        // ends the connection (never queued in MULTI)
  reset,       // resets the connection (never queued in MULTI)
  replica_stream,  // SYNC/PSYNC: the connection carries the replication stream until it ends
  // A learned command of unknown effect: it may have changed the connection in a way Corral
  // cannot follow, so the connection stays the client's until it leaves.
  session,
};

// What a command touches besides producing its reply. Together with Route it is the isolation
// rule (docs/commands.md "Effects", enforced over the whole table by command_effect_test):
// a `connection` command never runs on a shared connection, and a `server` command is kDangerous
// unless proxy/commands/command_effect.hpp lists it as harmless, with the reason.
enum class Effect : std::uint8_t {
  reply,       // only this client's reply: reads keys or server state, changes nothing
  keys,        // data: writes the keys it names (scripts included), or publishes messages
  connection,  // the state of the connection it runs on (SELECT, CLIENT REPLY, SUBSCRIBE ...)
  server,      // the server as a whole or other clients (FLUSHALL, CONFIG SET, CLIENT KILL ...)
  unknown,     // a learned command whose flags do not say: runs on a session-bound connection
};

// How keys are found when kMovableKeys is set (argv[0] is the command name).
enum class KeySpec : std::uint8_t {
  positions,          // first_key/last_key/key_step only
  numkeys_at_1,       // ZUNION numkeys key ...; ZINTER ZDIFF SINTERCARD ZINTERCARD LMPOP ZMPOP
  numkeys_at_2,       // EVAL script numkeys key ...; EVALSHA FCALL (+ _RO); BLMPOP/BZMPOP timeout
  dest_then_numkeys,  // ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE destination numkeys key ...
  streams,            // XREAD/XREADGROUP [options] STREAMS key ... id ...
  sort,               // SORT key [BY p] [LIMIT o c] [GET p ...] [STORE destination]; SORT_RO
  migrate,            // MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH..] [KEYS k ...]
  georadius_store,    // GEORADIUS/GEORADIUSBYMEMBER key ... [STORE k] [STOREDIST k]
};

// Longest command name, subcommands included ("cluster|count-failure-reports" is 29); lookups
// lower-case into a buffer of this size, so a longer name is simply unknown.
inline constexpr std::size_t kMaxCommandName = 32;

struct CommandSpec {
  std::string_view name;  // lower case, as COMMAND reports it; subcommands as "client|setname"
  int arity;              // Redis convention: >0 exact, <0 at least -arity
  std::uint32_t flags;
  int first_key;  // 0: no keys
  int last_key;   // -1: last argument, -2: second to last ...
  int key_step;
  KeySpec key_spec = KeySpec::positions;
  Route route = Route::shared;
  StateChange change = StateChange::none;
  Effect effect = Effect::reply;
};

// Whole table (top-level commands and subcommands), in a stable order; `id` = index in it.
// Top-level commands are sorted by name, each followed by its subcommands (sorted).
std::span<const CommandSpec> all_commands();

// The subcommand rows of a container command (empty for any other row).
std::span<const CommandSpec> subcommands(const CommandSpec& container);

// Case-insensitive lookup of a top-level command; nullptr when unknown.
const CommandSpec* find_command(std::string_view name);
// Subcommand of a container command (CLIENT, CONFIG, ...), case-insensitive; nullptr when unknown.
const CommandSpec* find_subcommand(const CommandSpec& container, std::string_view subcommand);
// Index of `spec` in all_commands(); all_commands().size() for a row learned from the upstream
// (proxy/commands/learned_commands.hpp), which lookups also return.
std::size_t command_id(const CommandSpec& spec);

// True when argc satisfies the arity (argc counts the command name).
bool arity_ok(const CommandSpec& spec, std::size_t argc);

// Indices into argv of every key the command touches, in argument order; `out` is cleared first
// (reuse it: no allocation once its capacity suffices). Empty when there are none or argv is
// malformed (wrong arity, numkeys not a number or larger than the arguments, no STREAMS ...).
// For a subcommand, argv still starts with the container: {"OBJECT", "ENCODING", key}.
void key_indices(const CommandSpec& spec, std::span<const std::string_view> argv,
                 std::vector<std::size_t>& out);

}  // namespace corral::proxy
