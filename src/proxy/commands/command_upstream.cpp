// Forwards COMMAND ... to the client's shared connection and adds Corral's own commands to the
// upstream's reply: entries to COMMAND / COMMAND INFO, names to COMMAND LIST, its count to COMMAND
// COUNT, docs to COMMAND DOCS. An error (a syntax error, an unknown subcommand) passes unchanged.
#include "proxy/commands/command_upstream.hpp"

#include "proxy/commands/command_shape.hpp"

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "proxy/ascii.hpp"
#include "proxy/commands/command_info.hpp"
#include "proxy/commands/command_shape.hpp"
#include "resp/array_elements.hpp"
#include "resp/encoder.hpp"
#include "upstream/link.hpp"

namespace corral::proxy {

namespace {
struct OwnDoc {
  std::string_view name;
  std::string_view summary;
};
// COMMAND DOCS for Corral's commands; docs/caching.md and the pages it links say more.
constexpr OwnDoc kOwnDocs[] = {
    {"corral.cluster", "Corral's view of the Redis Cluster upstream: slot map and nodes"},
    {"corral.hotkeys", "The hottest keys Corral saw lately, with rates and error bounds"},
    {"corral.info", "Corral's cache state for one key: policy, freshness, age, ttl, hits"},
    {"corral.invalidate", "Drops this Corral's cached copies of a key, a prefix or an HTTP tag"},
    {"corral.purge", "Deletes old versions of a versioned key, keeping versioned.keep"},
    {"corral.rollover", "Starts a new version of a versioned key"},
    {"corral.slowlog", "Corral's slowlog with the phases of each slow request"},
    {"corral.stats", "Per-policy cache counters and circuit breaker state"},
};

enum class Merge {
  pass,            // the upstream's reply as it is
  append_entries,  // an aggregate of n items gets Corral's `extras` after them
  add_count,       // an integer gets `extra_count` added
  replace_items,   // the items at the positions in `replacements` are replaced
};

class MergeCommand : public upstream::ReplyTarget {
 public:
  MergeCommand(std::shared_ptr<upstream::ReplyTarget> client, Merge merge, std::string fallback)
      : client_(std::move(client)), merge_(merge), fallback_(std::move(fallback)) {}

  std::string extras;  // append_entries: the bytes of extra_count items (pairs for a map)
  std::size_t extra_count = 0;
  std::vector<std::optional<std::string>> replacements;  // replace_items

  void on_reply(std::uint64_t tag, std::string_view reply) override {
    // COMMAND renamed away upstream (rename-command COMMAND ""): the table still knows Redis 7.0.
    if (reply.starts_with("-ERR unknown command")) return on_failure(tag, {});
    const auto merged = merge(reply);
    client_->on_reply(tag, merged ? std::string_view(*merged) : reply);
  }
  // The upstream is down or has no COMMAND: the built-in table answers.
  void on_failure(std::uint64_t tag, std::string_view) override {
    client_->on_reply(tag, fallback_);
  }

 private:
  // nullopt: pass the reply as it came (an error, or a shape this merge does not expect).
  std::optional<std::string> merge(std::string_view reply) const {
    if (merge_ == Merge::pass || reply.empty() || reply.front() == '-' || reply.front() == '!') {
      return std::nullopt;
    }
    if (merge_ == Merge::replace_items) return replaced(reply);
    const char type = reply.front();
    const auto eol = reply.find("\r\n");
    if (eol == std::string_view::npos) return std::nullopt;
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(reply.data() + 1, reply.data() + eol, n);
    if (ec != std::errc() || end != reply.data() + eol || n < 0) return std::nullopt;
    const auto total = static_cast<std::size_t>(n) + extra_count;
    std::string out;
    if (merge_ == Merge::add_count) {
      if (type != ':') return std::nullopt;
      resp::append_integer(out, static_cast<std::int64_t>(total));
      return out;
    }
    if (type != '*' && type != '%' && type != '~') return std::nullopt;
    resp::append_header(out, type, total);
    out.append(reply.substr(eol + 2));
    out.append(extras);
    return out;
  }

  std::optional<std::string> replaced(std::string_view reply) const {
    const auto items = resp::array_elements(reply, replacements.size());
    if (!items) return std::nullopt;
    std::string out;
    resp::append_array_header(out, items->size());
    for (std::size_t i = 0; i < items->size(); ++i) {
      out.append(replacements[i] ? std::string_view(*replacements[i]) : (*items)[i]);
    }
    return out;
  }

  std::shared_ptr<upstream::ReplyTarget> client_;
  Merge merge_;
  std::string fallback_;
};

// True when the call can go upstream: one server (a cluster's nodes may differ), with a target to
// answer later.
bool can_forward(const LocalCall& call) {
  return call.upstream != nullptr && !call.upstream->partitioned() && call.target != nullptr;
}

// The built-in table's answer, for when the upstream cannot give one.
std::string local_answer(LocalCall& call, LocalHandler handler) {
  std::string out;
  LocalCall local{call.client, call.argv,     call.settings, call.client_settings,
                  call.info,   call.awaiting, out,           call.cache};
  handler(local);
  return out;
}

std::shared_ptr<MergeCommand> merger(LocalCall& call, Merge merge, LocalHandler fallback) {
  return std::make_shared<MergeCommand>(*call.target, merge, local_answer(call, fallback));
}

Action send(LocalCall& call, std::shared_ptr<upstream::ReplyTarget> target) {
  call.deferred = true;
  // Queued in MULTI: Redis answered within EXEC, in the client's protocol.
  if (call.upstream_answer) {
    target->on_reply(call.tag, *call.upstream_answer);
    return Action::done;
  }
  std::string command;
  resp::append_command(command, call.argv);
  // On the client's shared connection and protocol: a RESP3 client's COMMAND DOCS are maps.
  static const CommandSpec& row = *find_command("command");
  const TableShape shape(row);
  const upstream::Routed routed{shape,          call.argv,           command, call.client.database,
                                call.client.id, call.client.protocol};
  if (!call.upstream->send(routed, call.tag, target)) target->on_failure(call.tag, {});
  return Action::done;
}

// COMMAND, COMMAND INFO without names: the upstream's entries, then Corral's.
Action all_entries(LocalCall& call) {
  auto merge = merger(call, Merge::append_entries, command_all);
  for (const CommandSpec* spec : own_commands()) {
    append_command_entry(merge->extras, *spec, call.client.protocol);
    ++merge->extra_count;
  }
  return send(call, merge);
}

void append_own_doc(std::string& out, const OwnDoc& doc, int protocol) {
  resp::append_bulk(out, doc.name);
  resp::append_header(out, protocol == 3 ? '%' : '*', protocol == 3 ? 3 : 6);
  resp::append_bulk(out, "summary");
  resp::append_bulk(out, doc.summary);
  resp::append_bulk(out, "since");
  resp::append_bulk(out, CORRAL_VERSION);
  resp::append_bulk(out, "group");
  resp::append_bulk(out, "corral");
}

// The local answer to COMMAND DOCS when the upstream cannot answer: Corral's own docs only.
Action own_docs_only(LocalCall& call) {
  std::string extras;
  std::size_t count = 0;
  for (const auto& doc : kOwnDocs) {
    const bool asked = call.argv.size() == 2 ||
                       std::any_of(call.argv.begin() + 2, call.argv.end(),
                                   [&](std::string_view name) { return iequals(name, doc.name); });
    if (!asked) continue;
    append_own_doc(extras, doc, call.client.protocol);
    ++count;
  }
  if (call.client.protocol == 3) {
    resp::append_header(call.reply, '%', count);
  } else {
    resp::append_array_header(call.reply, 2 * count);
  }
  call.reply.append(extras);
  return Action::done;
}
}  // namespace

Action command_all_upstream(LocalCall& call) {
  if (!can_forward(call)) return command_all(call);
  return all_entries(call);
}

Action command_count_upstream(LocalCall& call) {
  if (!can_forward(call)) return command_count(call);
  auto merge = merger(call, Merge::add_count, command_count);
  merge->extra_count = own_commands().size();
  return send(call, merge);
}

Action command_info_upstream(LocalCall& call) {
  if (!can_forward(call)) return command_info(call);
  if (call.argv.size() == 2) return all_entries(call);
  auto merge = merger(call, Merge::replace_items, command_info);
  for (std::size_t i = 2; i < call.argv.size(); ++i) {
    auto& item = merge->replacements.emplace_back();
    if (!is_own_command(call.argv[i])) continue;
    std::string lower(call.argv[i]);
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (const CommandSpec* spec = find_command(lower)) {
      append_command_entry(item.emplace(), *spec, call.client.protocol);
    }
  }
  return send(call, merge);
}

Action command_list_upstream(LocalCall& call) {
  if (!can_forward(call)) return command_list(call);
  auto merge = merger(call, Merge::append_entries, command_list);
  // A filter Redis refuses is refused by the upstream; its error passes unchanged.
  if (const auto filter = parse_list_filter(call.argv)) {
    for (const CommandSpec* spec : own_commands()) {
      if (!filter->admits(spec->name)) continue;
      resp::append_bulk(merge->extras, spec->name);
      ++merge->extra_count;
    }
  }
  return send(call, merge);
}

Action command_docs_upstream(LocalCall& call) {
  if (!can_forward(call)) return own_docs_only(call);
  auto merge = merger(call, Merge::append_entries, own_docs_only);
  for (const auto& doc : kOwnDocs) {
    const bool asked = call.argv.size() == 2 ||
                       std::any_of(call.argv.begin() + 2, call.argv.end(),
                                   [&](std::string_view name) { return iequals(name, doc.name); });
    if (!asked) continue;
    append_own_doc(merge->extras, doc, call.client.protocol);
    // A RESP2 map is a flat array: a name and its docs are two items.
    merge->extra_count += call.client.protocol == 3 ? 1 : 2;
  }
  return send(call, merge);
}

// COMMAND GETKEYS / GETKEYSANDFLAGS: the upstream's key extraction, except for Corral's own
// commands, which it does not know.
Action command_getkeys_upstream(LocalCall& call) {
  if (!can_forward(call) || (call.argv.size() > 2 && is_own_command(call.argv[2]))) {
    return command_getkeys(call);
  }
  return send(call, merger(call, Merge::pass, command_getkeys));
}

}  // namespace corral::proxy
