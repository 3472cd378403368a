// COMMAND, COMMAND COUNT / INFO / LIST [FILTERBY] / GETKEYS from the command table, in Redis
// 7.0's reply shape: the answers when the upstream cannot give its own (command_upstream.hpp).
#include "proxy/commands/command_info.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "proxy/ascii.hpp"
#include "proxy/commands/glob.hpp"
#include "proxy/commands/learned_commands.hpp"
#include "resp/encoder.hpp"

namespace corral::proxy {

namespace {
struct FlagName {
  std::uint32_t bit;
  std::string_view name;
};
constexpr std::array kFlagNames = {
    FlagName{kWrite, "write"},
    FlagName{kReadOnly, "readonly"},
    FlagName{kAdmin, "admin"},
    FlagName{kBlocking, "blocking"},
    FlagName{kPubSub, "pubsub"},
    FlagName{kNoAuth, "no_auth"},
    FlagName{kMovableKeys, "movablekeys"},
    FlagName{kFast, "fast"},
    FlagName{kLoading, "loading"},
    FlagName{kStale, "stale"},
};

bool is_top_level(const CommandSpec& spec) { return spec.name.find('|') == std::string_view::npos; }

// The built-in table's rows, then those learned from the upstream (COMMAND answers for both).
std::vector<const CommandSpec*> merged_rows() {
  std::vector<const CommandSpec*> rows;
  for (const auto& spec : all_commands()) rows.push_back(&spec);
  if (const LearnedCommands* learned = learned_commands()) {
    for (const auto& spec : learned->rows()) rows.push_back(&spec);
  }
  return rows;
}

std::vector<const CommandSpec*> top_level_rows() {
  auto rows = merged_rows();
  std::erase_if(rows, [](const CommandSpec* spec) { return !is_top_level(*spec); });
  return rows;
}

std::vector<const CommandSpec*> children_of(const CommandSpec& container) {
  std::vector<const CommandSpec*> children;
  for (const auto& row : subcommands(container)) children.push_back(&row);
  if (const LearnedCommands* learned = learned_commands()) {
    for (const auto& row : learned->rows()) {
      if (row.name.size() > container.name.size() && row.name.starts_with(container.name) &&
          row.name[container.name.size()] == '|') {
        children.push_back(&row);
      }
    }
  }
  return children;
}

}  // namespace

// [name, arity, [flags], first key, last key, step, [acl categories], [tips], [key specs],
// [subcommands]]; Redis sends the five inner lists as sets in RESP3.
void append_command_entry(std::string& out, const CommandSpec& spec, int protocol) {
  const char list = protocol == 3 ? '~' : '*';
  resp::append_array_header(out, 10);
  resp::append_bulk(out, spec.name);
  resp::append_integer(out, spec.arity);
  const auto flag_count = std::count_if(kFlagNames.begin(), kFlagNames.end(),
                                        [&](const FlagName& f) { return spec.flags & f.bit; });
  resp::append_header(out, list, static_cast<std::size_t>(flag_count));
  for (const auto& flag : kFlagNames) {
    if (spec.flags & flag.bit) resp::append_simple(out, flag.name);
  }
  resp::append_integer(out, spec.first_key);
  resp::append_integer(out, spec.last_key);
  resp::append_integer(out, spec.key_step);
  for (int i = 0; i < 3; ++i) resp::append_header(out, list, 0);
  const auto children = children_of(spec);
  resp::append_header(out, list, children.size());
  for (const CommandSpec* row : children) append_command_entry(out, *row, protocol);
}

bool is_own_command(std::string_view name) {
  return name.size() > kOwnPrefix.size() && iequals(name.substr(0, kOwnPrefix.size()), kOwnPrefix);
}

std::vector<const CommandSpec*> own_commands() {
  std::vector<const CommandSpec*> rows;
  for (const auto& spec : all_commands()) {
    if (is_top_level(spec) && is_own_command(spec.name)) rows.push_back(&spec);
  }
  return rows;
}

namespace {
const CommandSpec* find_by_full_name(std::string_view name) {
  const auto bar = name.find('|');
  const CommandSpec* spec = find_command(name.substr(0, bar));
  if (spec == nullptr || bar == std::string_view::npos) return spec;
  return find_subcommand(*spec, name.substr(bar + 1));
}
}  // namespace

Action command_all(LocalCall& call) {
  const auto rows = top_level_rows();
  resp::append_array_header(call.reply, rows.size());
  for (const CommandSpec* spec : rows)
    append_command_entry(call.reply, *spec, call.client.protocol);
  return Action::done;
}

Action command_count(LocalCall& call) {
  resp::append_integer(call.reply, static_cast<std::int64_t>(top_level_rows().size()));
  return Action::done;
}

Action command_info(LocalCall& call) {
  if (call.argv.size() == 2) return command_all(call);
  resp::append_array_header(call.reply, call.argv.size() - 2);
  for (std::size_t i = 2; i < call.argv.size(); ++i) {
    const CommandSpec* spec = find_by_full_name(call.argv[i]);
    if (spec == nullptr) {
      resp::append_null_array(call.reply);
    } else {
      append_command_entry(call.reply, *spec, call.client.protocol);
    }
  }
  return Action::done;
}

Action command_list(LocalCall& call) {
  const auto filter = parse_list_filter(call.argv);
  if (!filter) {
    resp::append_error(call.reply, "ERR syntax error");
    return Action::done;
  }
  // Like Redis: every command, each followed by its subcommands ("acl", "acl|cat" ...).
  std::vector<std::string_view> names;
  for (const CommandSpec* spec : top_level_rows()) {
    names.push_back(spec->name);
    for (const CommandSpec* child : children_of(*spec)) names.push_back(child->name);
  }
  std::erase_if(names, [&](std::string_view name) { return !filter->admits(name); });
  resp::append_array_header(call.reply, names.size());
  for (std::string_view name : names) resp::append_bulk(call.reply, name);
  return Action::done;
}

std::optional<ListFilter> parse_list_filter(std::span<const std::string_view> argv) {
  ListFilter filter;
  if (argv.size() == 2) return filter;
  if (argv.size() != 5 || !iequals(argv[2], "filterby")) return std::nullopt;
  if (iequals(argv[3], "module")) {
    filter.kind = ListFilter::Kind::module;
  } else if (iequals(argv[3], "aclcat")) {
    filter.kind = ListFilter::Kind::aclcat;
  } else if (iequals(argv[3], "pattern")) {
    filter.kind = ListFilter::Kind::pattern;
  } else {
    return std::nullopt;
  }
  filter.value = argv[4];
  return filter;
}

bool ListFilter::admits(std::string_view name) const {
  switch (kind) {
    case Kind::none:
      return true;
    case Kind::pattern:
      return glob_match(value, name, true);
    case Kind::module:  // the table knows no module's commands
    case Kind::aclcat:  // nor ACL categories
      return false;
  }
  return false;
}

Action command_getkeys(LocalCall& call) {
  const auto target = call.argv.subspan(2);
  const CommandSpec* spec = find_command(target[0]);
  if (spec == nullptr) {
    resp::append_error(call.reply, "ERR Invalid command specified");
    return Action::done;
  }
  if (target.size() >= 2) {
    if (const CommandSpec* sub = find_subcommand(*spec, target[1])) spec = sub;
  }
  if (!arity_ok(*spec, target.size())) {
    resp::append_error(call.reply, "ERR Invalid number of arguments specified for command");
    return Action::done;
  }
  std::vector<std::size_t> keys;
  key_indices(*spec, target, keys);
  if (keys.empty()) {
    resp::append_error(call.reply, "ERR The command has no key arguments");
    return Action::done;
  }
  resp::append_array_header(call.reply, keys.size());
  for (auto index : keys) resp::append_bulk(call.reply, target[index]);
  return Action::done;
}

}  // namespace corral::proxy
