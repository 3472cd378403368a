// Learning the upstream's commands from its COMMAND reply, and publishing them to all threads.
#include "proxy/commands/learned_commands.hpp"

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>

#include "resp/reply.hpp"

namespace corral::proxy {

namespace {
using resp::Reply;

struct FlagWord {
  std::string_view word;
  std::uint32_t flags;
};
// Redis's flag words as Corral's flags. An unknown admin command is refused unless allowed, as
// the known admin commands are; no_auth is not mapped: Corral's own AUTH still applies.
constexpr FlagWord kFlagWords[] = {
    {"write", kWrite},       {"readonly", kReadOnly}, {"admin", kAdmin | kDangerous},
    {"blocking", kBlocking}, {"pubsub", kPubSub},     {"fast", kFast},
    {"loading", kLoading},   {"stale", kStale},
};

bool is_text(const Reply& r) {
  return r.type == Reply::Type::simple || r.type == Reply::Type::bulk;
}

struct Parsed {
  std::string name;
  int arity = 0;
  std::uint32_t flags = 0;
  int first = 0, last = 0, step = 0;
  bool movable_keys = false;
  bool reads_keys_only = false;  // key specs, each flagged RO (read-only) and none RW/OW/RM
};

// True when a key spec ([flags, [RO, ACCESS], begin_search, ...] or a RESP3 map) says it only
// reads its keys: RO, and none of RW/OW/RM (Redis's key-spec flags).
bool key_spec_read_only(const Reply& spec) {
  if (spec.type != Reply::Type::array && spec.type != Reply::Type::map) return false;
  const auto& e = spec.elements;
  for (std::size_t i = 0; i + 1 < e.size(); i += 2) {
    if (!is_text(e[i]) || e[i].text != "flags") continue;
    bool ro = false;
    for (const Reply& flag : e[i + 1].elements) {
      if (!is_text(flag)) return false;
      if (flag.text == "RW" || flag.text == "OW" || flag.text == "RM") return false;
      ro = ro || flag.text == "RO";
    }
    return ro;
  }
  return false;
}

bool key_specs_read_only(const Reply& specs) {
  if (specs.type != Reply::Type::array || specs.elements.empty()) return false;
  for (const Reply& spec : specs.elements) {
    if (!key_spec_read_only(spec)) return false;
  }
  return true;
}

// One command entry; nullopt when it is not shaped like one.
std::optional<Parsed> parse_entry(const Reply& entry) {
  const auto& e = entry.elements;
  if (entry.type != Reply::Type::array || e.size() < 6 || !is_text(e[0]) || e[0].text.empty() ||
      e[1].type != Reply::Type::integer || e[1].integer == 0 || e[2].type != Reply::Type::array ||
      e[3].type != Reply::Type::integer || e[4].type != Reply::Type::integer ||
      e[5].type != Reply::Type::integer) {
    return std::nullopt;
  }
  Parsed p;
  for (char c : e[0].text) {
    if (c <= ' ' || c > '~') return std::nullopt;
    p.name += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  if (p.name.size() > kMaxCommandName) return std::nullopt;
  const auto small = [](std::int64_t v) { return v >= -1000000 && v <= 1000000; };
  if (!small(e[1].integer) || !small(e[3].integer) || !small(e[4].integer) ||
      !small(e[5].integer)) {
    return std::nullopt;
  }
  p.arity = static_cast<int>(e[1].integer);
  p.first = static_cast<int>(e[3].integer);
  p.last = static_cast<int>(e[4].integer);
  p.step = static_cast<int>(e[5].integer);
  // A range Corral cannot use (movable keys without one, or odd values) means "no keys".
  if (p.first <= 0 || p.step <= 0) p.first = p.last = p.step = 0;
  for (const Reply& flag : e[2].elements) {
    if (!is_text(flag)) return std::nullopt;
    for (const auto& word : kFlagWords) {
      if (flag.text == word.word) p.flags |= word.flags;
    }
    p.movable_keys = p.movable_keys || flag.text == "movablekeys";
  }
  if ((p.flags & kWrite) && (p.flags & kReadOnly)) p.flags &= ~kReadOnly;
  // Redis 6+ lists ACL categories after the key range: a command Redis calls dangerous is refused
  // unless allowed, like the table's dangerous rows.
  if (e.size() > 6 && e[6].type == Reply::Type::array) {
    for (const Reply& category : e[6].elements) {
      if (is_text(category) && category.text == "@dangerous") p.flags |= kDangerous;
    }
  }
  p.reads_keys_only = e.size() > 8 && key_specs_read_only(e[8]);
  return p;
}

// The built-in top-level row of that name, or nullptr (the table's own lookup, learned rows
// left out).
const CommandSpec* builtin_row(std::string_view name) {
  const CommandSpec* row = find_command(name);
  return row != nullptr && is_builtin(*row) ? row : nullptr;
}

// Only reads keys: flagged readonly, with a key range and key specs that all only read, and
// nothing that could hold or change the connection. Every readonly command of Redis 7.0 is such
// a `reply` row of the built-in table (command_effect_test checks it).
bool only_reads_keys(const Parsed& p) {
  constexpr std::uint32_t kHoldsOrChanges = kWrite | kAdmin | kDangerous | kBlocking | kPubSub;
  return (p.flags & kReadOnly) && !(p.flags & kHoldsOrChanges) && !p.movable_keys && p.first > 0 &&
         p.reads_keys_only;
}

// A command Corral cannot classify (a module's, a newer server's) may change the connection it
// runs on: it gets a connection of the client's own, kept until the client leaves, never a
// shared one. Dangerous ones stay refused unless allowed.
CommandSpec row_of(const Parsed& p, std::string_view name) {
  CommandSpec row{name, p.arity, p.flags, p.first, p.last, p.step};
  if (only_reads_keys(p)) {
    row.effect = Effect::reply;  // and the default route: shared
  } else {
    row.route = Route::dedicated;
    row.change = StateChange::session;
    row.effect = Effect::unknown;
  }
  return row;
}

// The built-in row of this lower-case name ("get", "client|no-touch"), or nullptr.
const CommandSpec* builtin_named(std::string_view name) {
  const auto bar = name.find('|');
  const CommandSpec* top = builtin_row(name.substr(0, bar));
  if (top == nullptr || bar == std::string_view::npos) return top;
  const CommandSpec* sub = find_subcommand(*top, name.substr(bar + 1));
  return sub != nullptr && is_builtin(*sub) ? sub : nullptr;
}

bool builtin_knows(std::string_view name) { return builtin_named(name) != nullptr; }

// `rename-command FLUSHALL myflush`: Redis answers for myflush with flushall's entry. The renamed
// command keeps everything the table knows of the original (dangerous, flushes the cache, its
// route, state change and effect), not just what COMMAND INFO's flag words say. One that Corral
// answers itself is refused: the handler goes by the original name, and Redis's own answer would
// act on or describe the upstream's connection (CLIENT SETNAME, AUTH, SELECT ...).
CommandSpec renamed_row(const Parsed& p, std::string_view name) {
  const CommandSpec* original = builtin_named(p.name);
  if (original == nullptr) return row_of(p, name);
  CommandSpec row = *original;
  row.name = name;  // build() keeps its own copy of the name
  if (row.route == Route::local) row.route = Route::refused;
  return row;
}

std::atomic<const LearnedCommands*> g_current{nullptr};
}  // namespace

const CommandSpec* LearnedCommands::find(std::string_view lower_name) const {
  const auto it = index_.find(lower_name);
  return it == index_.end() ? nullptr : it->second;
}

std::shared_ptr<const LearnedCommands> learn_commands(std::string_view reply) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != Reply::Type::array || decoded->elements.empty()) return nullptr;
  std::vector<CommandSpec> learned;
  std::deque<std::string> names;
  const auto keep = [&](const Parsed& p) {
    learned.push_back(row_of(p, names.emplace_back(p.name)));
  };
  for (const Reply& entry : decoded->elements) {
    // COMMAND INFO answers nil for a name it does not know.
    if (entry.type == Reply::Type::null) continue;
    const auto top = parse_entry(entry);
    if (!top || top->name.find('|') != std::string::npos) return nullptr;
    if (!builtin_knows(top->name)) keep(*top);
    if (entry.elements.size() < 10 || entry.elements[9].type != Reply::Type::array) continue;
    for (const Reply& sub_entry : entry.elements[9].elements) {
      const auto sub = parse_entry(sub_entry);
      if (!sub || !sub->name.starts_with(top->name + "|")) return nullptr;
      if (!builtin_knows(sub->name)) keep(*sub);
    }
  }
  return LearnedCommands::build(learned);
}

std::shared_ptr<const LearnedCommands> LearnedCommands::build(std::span<const CommandSpec> rows) {
  auto out = std::make_shared<LearnedCommands>();
  out->rows_.reserve(rows.size());  // rows never move once indexed
  for (const CommandSpec& row : rows) {
    if (out->find(row.name) != nullptr) continue;
    CommandSpec copy = row;
    copy.name = out->names_.emplace_back(row.name);
    out->rows_.push_back(copy);
    out->index_.emplace(copy.name, &out->rows_.back());
    out->signature_ += std::string(copy.name) + ' ' + std::to_string(copy.arity) + ' ' +
                       std::to_string(copy.flags) + ' ' + std::to_string(copy.first_key) + ' ' +
                       std::to_string(copy.last_key) + ' ' + std::to_string(copy.key_step) + ' ' +
                       std::to_string(static_cast<int>(copy.route)) + ' ' +
                       std::to_string(static_cast<int>(copy.effect)) + '\n';
    const auto bar = copy.name.find('|');
    if (bar == std::string_view::npos) continue;
    const std::string_view container = copy.name.substr(0, bar);
    if (!out->has_subcommands_of(container)) out->containers_.push_back(container);
  }
  return out;
}

namespace {
std::mutex g_publish_mutex;

// Publishes `rows` (then the current snapshot's rows, when `keep_current`: the first of a name
// wins) unless that equals the current snapshot. Caller holds g_publish_mutex.
void publish_locked(std::vector<CommandSpec> rows, bool keep_current) {
  static auto* kept = new std::vector<std::shared_ptr<const LearnedCommands>>();  // never freed
  const LearnedCommands* current = g_current.load(std::memory_order_acquire);
  if (keep_current && current != nullptr) {
    rows.insert(rows.end(), current->rows().begin(), current->rows().end());
  }
  auto learned = LearnedCommands::build(rows);
  if (current != nullptr && current->signature() == learned->signature()) return;
  kept->push_back(learned);
  g_current.store(kept->back().get(), std::memory_order_release);
}
}  // namespace

void publish_learned_commands(std::shared_ptr<const LearnedCommands> learned) {
  if (!learned) return;
  std::lock_guard lock(g_publish_mutex);
  // A union with what was learned before: names learned one by one (renamed commands) are not in
  // COMMAND's reply, and a command that went away upstream is answered by Redis's own error.
  publish_locked({learned->rows().begin(), learned->rows().end()}, true);
}

bool learn_command_info(std::string_view reply, std::string_view name) {
  const auto decoded = resp::decode_reply(reply);
  if (!decoded || decoded->type != Reply::Type::array || decoded->elements.size() != 1) {
    return false;
  }
  const auto parsed = parse_entry(decoded->elements[0]);
  if (!parsed || parsed->name.find('|') != std::string::npos) return false;
  std::string lower;
  for (char c : name) lower += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  if (lower.empty() || lower.size() > kMaxCommandName || lower.find('|') != std::string::npos) {
    return false;
  }
  std::vector<CommandSpec> rows{renamed_row(*parsed, lower)};
  // A renamed container (CLIENT, SCRIPT ...) brings its subcommands under the new name: without
  // them every subcommand would take the container's row (SCRIPT's, on a shared connection).
  std::deque<std::string> names;  // the subcommand rows' names, until build() copies them
  const auto& entry = decoded->elements[0].elements;
  if (entry.size() >= 10 && entry[9].type == Reply::Type::array) {
    for (const Reply& sub_entry : entry[9].elements) {
      const auto sub = parse_entry(sub_entry);
      if (!sub || !sub->name.starts_with(parsed->name + "|")) return false;
      const std::string& sub_name =
          names.emplace_back(lower + sub->name.substr(parsed->name.size()));
      if (sub_name.size() > kMaxCommandName) continue;  // never found by a lookup anyway
      rows.push_back(renamed_row(*sub, sub_name));
    }
  }
  std::lock_guard lock(g_publish_mutex);
  publish_locked(std::move(rows), true);
  return true;
}

const LearnedCommands* learned_commands() { return g_current.load(std::memory_order_acquire); }

bool is_builtin(const CommandSpec& spec) {
  const auto rows = all_commands();
  const std::less<const CommandSpec*> before;
  return !before(&spec, rows.data()) && before(&spec, rows.data() + rows.size());
}

}  // namespace corral::proxy
