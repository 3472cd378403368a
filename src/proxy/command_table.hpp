// The Redis 7.0 command table as data: arity, flags and key positions of every command,
// plus Corral's own routing flags. Lookups are case-insensitive and allocate nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace corral::proxy {

enum CommandFlag : std::uint32_t {
  kWrite = 1u << 0,        // modifies data: cached entries of its keys are invalidated
  kReadOnly = 1u << 1,
  kAdmin = 1u << 2,
  kBlocking = 1u << 3,     // may block the connection (BLPOP, XREAD BLOCK, WAIT ...)
  kPubSub = 1u << 4,       // enters or works in subscribed mode
  kTransaction = 1u << 5,  // MULTI EXEC DISCARD WATCH UNWATCH
  kDangerous = 1u << 6,    // refused unless listed in client.allow_commands
  kLocal = 1u << 7,        // answered by Corral itself
  kNoAuth = 1u << 8,       // allowed before AUTH (AUTH, HELLO, QUIT)
  kMovableKeys = 1u << 9,  // key positions depend on arguments (EVAL numkeys, XREAD STREAMS ...)
  kFast = 1u << 10,
  kLoading = 1u << 11,
  kStale = 1u << 12,
};

// How keys are found when kMovableKeys is set.
enum class KeySpec : std::uint8_t {
  positions,        // first/last/step only
  numkeys_at_2,     // EVAL script numkeys key... ; ZUNIONSTORE dst numkeys ... (keys from 3 + dst)
  numkeys_at_1,     // ZUNION numkeys key ..., LMPOP numkeys key ..., SINTERCARD
  numkeys_at_3,     // ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE destination numkeys key...
  blocking_numkeys_at_2,  // BLMPOP timeout numkeys key..., BZMPOP
  streams,          // XREAD/XREADGROUP ... STREAMS key... id...
  sort,             // SORT key [... STORE dst]
  migrate,          // MIGRATE host port key|"" ... [KEYS k...]
  georadius_store,  // GEORADIUS... [STORE k] [STOREDIST k]
};

struct CommandSpec {
  std::string_view name;     // lower case, as COMMAND reports it; subcommands as "client|setname"
  int arity;                 // Redis convention: >0 exact, <0 at least -arity
  std::uint32_t flags;
  int first_key;             // 0: no keys
  int last_key;              // -1: last argument, -2: second to last ...
  int key_step;
  KeySpec key_spec = KeySpec::positions;
};

// Whole table (top-level commands and subcommands), in a stable order; `id` = index in it.
std::span<const CommandSpec> all_commands();

// Case-insensitive lookup of a top-level command; nullptr when unknown.
const CommandSpec* find_command(std::string_view name);
// Subcommand of a container command (CLIENT, CONFIG, ...), case-insensitive; nullptr when unknown.
const CommandSpec* find_subcommand(const CommandSpec& container, std::string_view subcommand);
// Index of `spec` in all_commands().
std::size_t command_id(const CommandSpec& spec);

// True when argc satisfies the arity (argc counts the command name).
bool arity_ok(const CommandSpec& spec, std::size_t argc);

// Indices into argv of every key the command touches (empty when none or malformed).
void key_indices(const CommandSpec& spec, std::span<const std::string_view> argv,
                 std::vector<std::size_t>& out);

}  // namespace corral::proxy
