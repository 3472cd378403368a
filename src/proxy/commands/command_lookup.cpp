// One COMMAND INFO per unknown name: the reply publishes the command (learned_commands.hpp) or
// marks the name unknown.
#include "proxy/commands/command_lookup.hpp"

#include "upstream/upstream.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "proxy/commands/command_table.hpp"
#include "proxy/commands/learned_commands.hpp"
#include "proxy/resp3.hpp"
#include "resp/encoder.hpp"
#include "upstream/upstream.hpp"

namespace corral::proxy {

namespace {
// An unknown name is asked about again after this long (the upstream may change).
constexpr std::chrono::seconds kUnknownFor{10};
// Beyond this many remembered names the table starts over: bounded memory for bad names.
constexpr std::size_t kMaxRemembered = 4096;

// Publishes the command the upstream describes, or remembers that it does not know the name.
class LookupReply : public upstream::ReplyTarget {
 public:
  using Table = CommandLookup::Table;
  using Entry = CommandLookup::Entry;
  using State = CommandLookup::State;

  LookupReply(std::weak_ptr<Table> table, std::string name)
      : table_(std::move(table)), name_(std::move(name)) {}
  void on_reply(std::uint64_t, std::string_view reply) override {
    finish(learn_command_info(reply, name_));
  }
  void on_failure(std::uint64_t, std::string_view) override { finish(false); }

 private:
  void finish(bool learned) {
    auto table = table_.lock();
    if (!table) return;
    // Learned: the name resolves from now on, so no entry is needed.
    if (learned) {
      table->erase(name_);
    } else {
      (*table)[name_] = Entry{State::unknown, std::chrono::steady_clock::now()};
    }
  }

  std::weak_ptr<Table> table_;
  std::string name_;
};

// Command names are printable ASCII without spaces. Anything else is not asked about: Redis
// compares names with strcasecmp, so "GET\0X" can find GET's row in COMMAND INFO (when its hash
// lands in GET's bucket, which depends on the server's random seed) and would be learned as GET.
bool could_name_a_command(std::string_view name) {
  if (name.empty() || name.size() > kMaxCommandName) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return c > ' ' && c < 0x7f && c != '|'; });
}
}  // namespace

CommandLookup::Answer CommandLookup::lookup(std::string_view name, upstream::Upstream& upstream) {
  if (!could_name_a_command(name)) return Answer::unknown;
  std::string lower;
  for (char c : name) lower += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  const auto now = std::chrono::steady_clock::now();
  if (auto it = table_->find(lower); it != table_->end()) {
    if (it->second.state == State::pending) return Answer::ask_later;
    if (now - it->second.at < kUnknownFor) return Answer::unknown;
    table_->erase(it);
  }
  if (table_->size() >= kMaxRemembered) table_->clear();
  std::string command;
  const std::vector<std::string_view> argv{"COMMAND", "INFO", name};
  resp::append_command(command, argv);
  auto reply = std::make_shared<LookupReply>(table_, lower);
  if (!upstream.ask_server(command, 0, reply)) return Answer::unknown;
  (*table_)[lower] = Entry{State::pending, now};
  return Answer::ask_later;
}

}  // namespace corral::proxy
