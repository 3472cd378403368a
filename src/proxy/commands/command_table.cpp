// Lookups into the generated command table (command_table_data.cpp) and key extraction for every
// KeySpec; each movable-key rule mirrors the matching *GetKeys function of Redis 7.0 (db.c).
#include "proxy/commands/command_table.hpp"

#include <array>
#include <cassert>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proxy/ascii.hpp"
#include "proxy/commands/learned_commands.hpp"

namespace corral::proxy {
namespace {

using Argv = std::span<const std::string_view>;

// A lower-cased copy of a name in a fixed buffer on the stack: lookups never allocate.
class LowerName {
 public:
  // Appends `s` lower-cased (ASCII only, like Redis' strcasecmp); false when it does not fit.
  bool append(std::string_view s) {
    if (s.size() > buf_.size() - size_) return false;
    for (char c : s) buf_[size_++] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    return true;
  }
  std::string_view view() const { return {buf_.data(), size_}; }

 private:
  std::array<char, kMaxCommandName> buf_{};
  std::size_t size_ = 0;
};

using NameIndex = std::unordered_map<std::string_view, const CommandSpec*>;

// Every row by its (lower-case) name, built once, thread-safely, at the first lookup. The keys
// view the table's static strings, so a lookup hashes and compares without allocating.
const NameIndex& index_by_name() {
  static const NameIndex* const index = [] {
    auto* m = new NameIndex();
    m->reserve(all_commands().size());
    for (const CommandSpec& row : all_commands()) m->emplace(row.name, &row);
    return m;
  }();  // never destroyed: a lookup may run while other statics are being destroyed
  return *index;
}

// Names of at most 8 bytes (GET, SET, HGETALL, ... most of what clients send) are also found
// by their bytes read as one integer in a small open-addressing table: no string hash, no memcmp.
class ShortNameIndex {
 public:
  static constexpr std::size_t kMaxLength = 8;

  static std::uint64_t pack(std::string_view lower) {
    std::uint64_t packed = 0;
    std::memcpy(&packed, lower.data(), lower.size());
    return packed;
  }
  ShortNameIndex() {
    for (const CommandSpec& row : all_commands()) {
      if (row.name.empty() || row.name.size() > kMaxLength) continue;
      std::size_t i = slot_of(pack(row.name));
      while (slots_[i].row != nullptr) i = (i + 1) % kSlots;
      slots_[i] = {pack(row.name), &row};
    }
  }
  // `lower` must be 1 to kMaxLength bytes; the packed bytes and the length identify a name.
  const CommandSpec* find(std::string_view lower) const {
    const std::uint64_t packed = pack(lower);
    for (std::size_t i = slot_of(packed); slots_[i].row != nullptr; i = (i + 1) % kSlots) {
      if (slots_[i].packed == packed && slots_[i].row->name.size() == lower.size()) {
        return slots_[i].row;
      }
    }
    return nullptr;
  }

 private:
  static constexpr std::size_t kSlots = 1024;  // a power of two, several times the short names
  struct Slot {
    std::uint64_t packed = 0;
    const CommandSpec* row = nullptr;
  };
  static std::size_t slot_of(std::uint64_t packed) {
    return static_cast<std::size_t>((packed * 0x9E3779B97F4A7C15ull) >> 54);  // top 10 bits
  }
  std::array<Slot, kSlots> slots_{};
};

const CommandSpec* lookup(std::string_view lower) {
  if (!lower.empty() && lower.size() <= ShortNameIndex::kMaxLength) {
    static const ShortNameIndex* const short_names = new ShortNameIndex();  // never destroyed
    return short_names->find(lower);
  }
  const NameIndex& index = index_by_name();
  auto it = index.find(lower);
  return it == index.end() ? nullptr : it->second;
}

// A non-negative decimal count; nullopt for anything else (sign, spaces, overflow).
std::optional<std::size_t> parse_count(std::string_view s) {
  std::size_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return n;
}

// Legacy first/last/step range. Arity was checked, but variadic commands still need the bounds
// check, and a pair-wise range (MSET k v k) must cover the arguments exactly.
void positional_keys(const CommandSpec& spec, std::size_t argc, std::vector<std::size_t>& out) {
  if (spec.first_key <= 0 || spec.key_step <= 0) return;
  const long long argcl = static_cast<long long>(argc);
  const long long first = spec.first_key;
  const long long last = spec.last_key < 0 ? argcl + spec.last_key : spec.last_key;
  if (last < first || last >= argcl) return;
  if (spec.last_key < 0 && (last - first + 1) % spec.key_step != 0) return;
  for (long long i = first; i <= last; i += spec.key_step)
    out.push_back(static_cast<std::size_t>(i));
}

// `numkeys` at argv[at], then that many keys; false (nothing added) when the count is not a
// number or exceeds the arguments, which Redis rejects too.
bool numkeys_keys(Argv argv, std::size_t at, std::vector<std::size_t>& out) {
  if (at >= argv.size()) return false;
  auto n = parse_count(argv[at]);
  if (!n || *n > argv.size() - at - 1) return false;
  for (std::size_t i = 0; i < *n; ++i) out.push_back(at + 1 + i);
  return true;
}

// XREAD [COUNT n] [BLOCK ms] STREAMS k... id...; XREADGROUP GROUP g c [..] [NOACK] STREAMS ...
// The options are skipped, not searched for "STREAMS": a group, consumer or key may be so named.
void stream_keys(Argv argv, std::vector<std::size_t>& out) {
  std::size_t i = 1;
  for (; i < argv.size(); ++i) {
    const std::string_view a = argv[i];
    if (iequals(a, "block") || iequals(a, "count")) {
      ++i;
    } else if (iequals(a, "group")) {
      i += 2;
    } else if (!iequals(a, "noack")) {
      break;
    }
  }
  if (i >= argv.size() || !iequals(argv[i], "streams")) return;
  const std::size_t rest = argv.size() - i - 1;  // keys then as many ids
  if (rest == 0 || rest % 2 != 0) return;
  for (std::size_t k = 0; k < rest / 2; ++k) out.push_back(i + 1 + k);
}

// SORT key ... [STORE dst]: BY/GET patterns name keys only through a pattern, never routable.
// SORT_RO has no STORE (Redis answers a syntax error), so only a write SORT looks for it.
void sort_keys(const CommandSpec& spec, Argv argv, std::vector<std::size_t>& out) {
  out.push_back(1);
  if (!(spec.flags & kWrite)) return;
  std::size_t store = 0;
  for (std::size_t i = 2; i < argv.size(); ++i) {
    if (iequals(argv[i], "limit")) {
      i += 2;
    } else if (iequals(argv[i], "get") || iequals(argv[i], "by")) {
      i += 1;
    } else if (iequals(argv[i], "store") && i + 1 < argv.size()) {
      store = i + 1;  // the last STORE wins, as in Redis
    }
  }
  if (store != 0) out.push_back(store);
}

// MIGRATE host port key db timeout, or with key "" and KEYS k...; options before KEYS skipped.
void migrate_keys(Argv argv, std::vector<std::size_t>& out) {
  for (std::size_t i = 6; i < argv.size(); ++i) {
    if (iequals(argv[i], "keys")) {
      if (!argv[3].empty()) return;  // Redis refuses KEYS with a non-empty key argument
      for (std::size_t k = i + 1; k < argv.size(); ++k) out.push_back(k);
      return;
    }
    if (iequals(argv[i], "auth")) {
      i += 1;
    } else if (iequals(argv[i], "auth2")) {
      i += 2;
    }
  }
  out.push_back(3);
}

// GEORADIUS key ... [STORE k] [STOREDIST k]: the last one wins, as in Redis.
void georadius_keys(Argv argv, std::vector<std::size_t>& out) {
  out.push_back(1);
  std::size_t store = 0;
  for (std::size_t i = 5; i + 1 < argv.size(); ++i) {
    if (iequals(argv[i], "store") || iequals(argv[i], "storedist")) store = ++i;
  }
  if (store != 0) out.push_back(store);
}

}  // namespace

namespace {
// Each built-in row's subcommands as [first, end) row indices, computed once: the dispatcher asks
// for every request whether its command has any.
struct SubcommandRange {
  std::uint32_t first = 0;
  std::uint32_t end = 0;
};

const std::vector<SubcommandRange>& subcommand_ranges() {
  static const std::vector<SubcommandRange>* const ranges = [] {
    const auto rows = all_commands();
    auto* out = new std::vector<SubcommandRange>(rows.size());
    for (std::size_t id = 0; id < rows.size(); ++id) {
      const std::string_view name = rows[id].name;
      std::size_t end = id + 1;
      // Subcommands directly follow their container (the generator's order), and only
      // containers are followed by rows named "<container>|...".
      while (end < rows.size() && rows[end].name.size() > name.size() &&
             rows[end].name.starts_with(name) && rows[end].name[name.size()] == '|') {
        ++end;
      }
      (*out)[id] = {static_cast<std::uint32_t>(id + 1), static_cast<std::uint32_t>(end)};
    }
    return out;
  }();  // never destroyed, like the name index
  return *ranges;
}
}  // namespace

std::span<const CommandSpec> subcommands(const CommandSpec& container) {
  // Learned rows list their subcommands as rows of their own ("x|y"), found by name.
  if (!is_builtin(container)) return {};
  const SubcommandRange range = subcommand_ranges()[command_id(container)];
  return all_commands().subspan(range.first, range.end - range.first);
}

const CommandSpec* find_command(std::string_view name) {
  LowerName lower;
  // A '|' would let "client|kill" through as a top-level command.
  if (name.find('|') != std::string_view::npos || !lower.append(name)) return nullptr;
  if (const CommandSpec* builtin = lookup(lower.view())) return builtin;
  const LearnedCommands* learned = learned_commands();
  return learned ? learned->find(lower.view()) : nullptr;
}

const CommandSpec* find_subcommand(const CommandSpec& container, std::string_view subcommand) {
  const LearnedCommands* learned = learned_commands();
  // Most commands have no subcommands: answer those without hashing the argument (unless the
  // upstream taught Corral some).
  if (subcommands(container).empty() &&
      (learned == nullptr || !learned->has_subcommands_of(container.name))) {
    return nullptr;
  }
  LowerName lower;
  if (subcommand.empty() || subcommand.find('|') != std::string_view::npos ||
      !lower.append(container.name) || !lower.append("|") || !lower.append(subcommand)) {
    return nullptr;
  }
  if (const CommandSpec* builtin = lookup(lower.view())) return builtin;
  return learned ? learned->find(lower.view()) : nullptr;
}

std::size_t command_id(const CommandSpec& spec) {
  const auto rows = all_commands();
  // Learned rows share the id after the table's (the "unknown" metric): metrics are sized once.
  if (!is_builtin(spec)) return rows.size();
  return static_cast<std::size_t>(&spec - rows.data());
}

bool arity_ok(const CommandSpec& spec, std::size_t argc) {
  if (spec.arity >= 0) return argc == static_cast<std::size_t>(spec.arity);
  return argc >= static_cast<std::size_t>(-spec.arity);
}

void key_indices(const CommandSpec& spec, Argv argv, std::vector<std::size_t>& out) {
  out.clear();
  // Every rule below relies on the minimum arity (e.g. MIGRATE's argv[3]).
  if (!arity_ok(spec, argv.size())) return;
  switch (spec.key_spec) {
    case KeySpec::positions:
      return positional_keys(spec, argv.size(), out);
    case KeySpec::numkeys_at_1:
      numkeys_keys(argv, 1, out);
      return;
    case KeySpec::numkeys_at_2:
      numkeys_keys(argv, 2, out);
      return;
    case KeySpec::dest_then_numkeys:
      out.push_back(1);
      if (!numkeys_keys(argv, 2, out)) out.clear();
      return;
    case KeySpec::streams:
      return stream_keys(argv, out);
    case KeySpec::sort:
      return sort_keys(spec, argv, out);
    case KeySpec::migrate:
      return migrate_keys(argv, out);
    case KeySpec::georadius_store:
      return georadius_keys(argv, out);
  }
}

}  // namespace corral::proxy
