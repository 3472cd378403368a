// Commands learned from the upstream's COMMAND reply: merged with the built-in table, garbage
// ignored, and routed by the dispatcher like built-in ones.
#include <catch2/catch.hpp>

#include "proxy/commands/command_effect.hpp"
#include "proxy/commands/learned_commands.hpp"
#include "recording_upstream.hpp"

using namespace corral;
using namespace corral::proxy;
using namespace corral::proxy::test;
using session::Action;

namespace {
// One Redis 7 key spec with these flags (RO, RW, ACCESS ...), as COMMAND answers in RESP2.
std::string key_spec(std::initializer_list<std::string_view> flags) {
  std::string out = "*6\r\n$5\r\nflags\r\n";
  resp::append_array_header(out, flags.size());
  for (auto f : flags) resp::append_simple(out, f);
  return out + "$12\r\nbegin_search\r\n*0\r\n$9\r\nfind_keys\r\n*0\r\n";
}
const std::string kReadSpecs = "*1\r\n" + key_spec({"RO", "ACCESS"});

// [name, arity, [flags], first, last, step, [acl], [tips], [key specs], [subcommands]]
std::string entry(std::string_view name, int arity, std::initializer_list<std::string_view> flags,
                  int first, int last, int step, const std::string& subs = "*0\r\n",
                  const std::string& specs = "*0\r\n") {
  std::string out = "*10\r\n";
  resp::append_bulk(out, name);
  resp::append_integer(out, arity);
  resp::append_array_header(out, flags.size());
  for (auto f : flags) resp::append_simple(out, f);
  resp::append_integer(out, first);
  resp::append_integer(out, last);
  resp::append_integer(out, step);
  out += "*0\r\n*0\r\n" + specs + subs;
  return out;
}

std::string command_reply() {
  const std::string client_subs = "*2\r\n" + entry("client|no-touch", 3, {"noscript"}, 0, 0, 0) +
                                  entry("client|id", 2, {"noscript"}, 0, 0, 0);
  return "*5\r\n" + entry("get", 2, {"readonly", "fast"}, 1, 1, 1) +
         entry("newcmd", -3, {"write", "denyoom"}, 1, -1, 2) +
         entry("getx", 2, {"readonly", "fast"}, 1, 1, 1, "*0\r\n", kReadSpecs) +
         entry("client", -2, {}, 0, 0, 0, client_subs) +
         entry("newblock", -2, {"write", "blocking"}, 1, 1, 1);
}
}  // namespace

TEST_CASE("learn_commands keeps what the built-in table lacks", "[learned]") {
  const auto learned = learn_commands(command_reply());
  REQUIRE(learned);
  std::vector<std::string_view> names;
  for (const auto& row : learned->rows()) names.push_back(row.name);
  CHECK(names == std::vector<std::string_view>{"newcmd", "getx", "client|no-touch", "newblock"});
  const CommandSpec* newcmd = learned->find("newcmd");
  REQUIRE(newcmd);
  CHECK(newcmd->arity == -3);
  CHECK((newcmd->flags & kWrite));
  CHECK(newcmd->first_key == 1);
  CHECK(newcmd->last_key == -1);
  CHECK(newcmd->key_step == 2);
  // Unknown effect: a connection of the client's own, kept until it leaves.
  CHECK(newcmd->route == Route::dedicated);
  CHECK(newcmd->change == StateChange::session);
  CHECK(newcmd->effect == Effect::unknown);
  CHECK(learned->find("newblock")->route == Route::dedicated);
  CHECK(learned->find("client|no-touch")->route == Route::dedicated);
  // Only reads its keys: shared, like GET.
  CHECK(learned->find("getx")->route == Route::shared);
  CHECK(learned->find("getx")->effect == Effect::reply);
  for (const CommandSpec& row : learned->rows()) {
    INFO(row.name);
    CHECK(effect_rule_violation(row).empty());
  }
  CHECK((learned->find("getx")->flags & kReadOnly));
  CHECK(learned->find("get") == nullptr);
  CHECK(learned->has_subcommands_of("client"));
  CHECK_FALSE(learned->has_subcommands_of("get"));
}

TEST_CASE("learn_commands refuses garbage: the built-in table stays alone", "[learned]") {
  const std::string good = entry("newcmd", -3, {"write"}, 1, -1, 2);
  for (const std::string& bad : std::vector<std::string>{
           "", "+OK\r\n", "-ERR unknown command 'COMMAND'\r\n", "*0\r\n", ":1\r\n", "*1\r\n:1\r\n",
           "*1\r\n*2\r\n$3\r\nabc\r\n:1\r\n", good.substr(0, good.size() - 3),
           "*2\r\n" + good + "$3\r\nabc\r\n", "*1\r\n" + entry("bad name", 1, {}, 0, 0, 0),
           "*1\r\n" + entry("x|y", 1, {}, 0, 0, 0), "*1\r\n" + entry("zero", 0, {}, 0, 0, 0),
           "*1\r\n" + entry("cont", -2, {}, 0, 0, 0, "*1\r\n" + entry("other|sub", 2, {}, 0, 0, 0)),
           "*1\r\n" + entry(std::string(kMaxCommandName + 1, 'a'), 1, {}, 0, 0, 0)}) {
    INFO(bad);
    CHECK(learn_commands(bad) == nullptr);
  }
  // COMMAND INFO's nil for an unknown name is skipped, not an error.
  CHECK(learn_commands("*2\r\n*-1\r\n" + good));
}

TEST_CASE("a renamed command is learned by asking the upstream about its name", "[learned]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"RENAMEDGET", "k"}) == Action::wait_then_retry);
  auto& shared = proxy.links.shared_of(0);
  REQUIRE(shared.bytes() == std::vector<std::string>{wire({"COMMAND", "INFO", "RENAMEDGET"})});
  // rename-command keeps the original name in the entry.
  shared.answer("*1\r\n" + entry("get", 2, {"readonly", "fast"}, 1, 1, 1));
  CHECK(client.retry({"RENAMEDGET", "k"}) == Action::done);
  CHECK(shared.sent.back().bytes == wire({"RENAMEDGET", "k"}));
  const CommandSpec* learned = find_command("renamedget");
  REQUIRE(learned);
  CHECK(learned->arity == 2);
  CHECK((learned->flags & kReadOnly));
  CHECK(learned->first_key == 1);
  // Learning more (COMMAND at a reconnect) keeps it.
  publish_learned_commands(learn_commands("*1\r\n" + entry("other", 1, {}, 0, 0, 0)));
  CHECK(find_command("renamedget") != nullptr);
  CHECK(find_command("other") != nullptr);
  CHECK_FALSE(learn_command_info("garbage", "x"));
  CHECK_FALSE(learn_command_info("*1\r\n*-1\r\n", "x"));
}

TEST_CASE("published commands are found, routed and listed like built-in ones", "[learned]") {
  publish_learned_commands(learn_commands(command_reply()));
  REQUIRE(learned_commands() != nullptr);
  const CommandSpec* getx = find_command("GETX");
  REQUIRE(getx);
  CHECK_FALSE(is_builtin(*getx));
  CHECK(is_builtin(*find_command("get")));
  CHECK(command_id(*getx) == all_commands().size());
  const CommandSpec* no_touch = find_subcommand(*find_command("client"), "NO-TOUCH");
  REQUIRE(no_touch);
  CHECK(no_touch->name == "client|no-touch");
  CHECK(find_subcommand(*find_command("get"), "x") == nullptr);
  std::vector<std::size_t> keys;
  const std::vector<std::string_view> argv{"newcmd", "k1", "v1", "k2", "v2"};
  key_indices(*find_command("newcmd"), argv, keys);
  CHECK(keys == std::vector<std::size_t>{1, 3});

  // An equal snapshot is not published again.
  const LearnedCommands* current = learned_commands();
  publish_learned_commands(learn_commands(command_reply()));
  CHECK(learned_commands() == current);

  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"GETX", "k"}) == Action::done);
  CHECK(proxy.links.shared_of(0).bytes() == std::vector<std::string>{wire({"GETX", "k"})});
  CHECK(proxy.links.dedicated.empty());
  CHECK(client.send({"newcmd", "k", "v"}) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 1);
  CHECK(proxy.links.last_dedicated().bytes() ==
        std::vector<std::string>{wire({"newcmd", "k", "v"})});
  // Answered, it keeps its connection: whatever newcmd changed there stays the client's.
  proxy.links.last_dedicated().answer("+OK\r\n");
  CHECK(client.send({"GETX", "k"}) == Action::done);
  CHECK(proxy.links.last_dedicated().sent.back().bytes == wire({"GETX", "k"}));
  CHECK(proxy.links.last_dedicated().closes == 0);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
  CHECK(client.send({"GETX"}) == Action::done);
  CHECK(client.reply() == "-ERR wrong number of arguments for 'getx' command\r\n");
  CHECK(client.send({"NEWBLOCK", "k"}) == Action::done);
  CHECK(proxy.links.dedicated.size() == 1);

  // The built-in table's answers (the upstream refuses: COMMAND falls back to them) include what
  // was learned.
  proxy.links.shared_of(0).refuse = true;
  CHECK(client.send({"COMMAND", "INFO", "getx", "client|no-touch"}) == Action::done);
  CHECK(client.reply().find("$4\r\ngetx\r\n:2\r\n") != std::string::npos);
  CHECK(client.reply().find("client|no-touch") != std::string::npos);
  CHECK(client.send({"COMMAND", "LIST"}) == Action::done);
  CHECK(client.reply().find("$6\r\nnewcmd\r\n") != std::string::npos);
  CHECK(client.send({"COMMAND", "GETKEYS", "newcmd", "a", "1", "b", "2"}) == Action::done);
  CHECK(client.reply() == "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  CHECK(client.send({"COMMAND", "COUNT"}) == Action::done);
  std::size_t builtin_top = 0;
  for (const auto& row : all_commands())
    builtin_top += row.name.find('|') == std::string_view::npos;
  std::size_t learned_top = 0;
  for (const auto& row : learned_commands()->rows()) {
    learned_top += row.name.find('|') == std::string_view::npos;
  }
  CHECK(learned_top >= 3);
  CHECK(client.reply() == ":" + std::to_string(builtin_top + learned_top) + "\r\n");
}

TEST_CASE("a renamed dangerous command stays dangerous and still flushes the cache", "[learned]") {
  // rename-command FLUSHALL myflush: COMMAND INFO myflush answers with flushall's entry, whose
  // flag words alone ("write", "noscript") would make it an ordinary write.
  REQUIRE(learn_command_info("*1\r\n" + entry("flushall", -1, {"write", "noscript"}, 0, 0, 0),
                             "MYFLUSH"));
  const CommandSpec* renamed = find_command("myflush");
  REQUIRE(renamed);
  CHECK((renamed->flags & kDangerous));
  CHECK((renamed->flags & kFlushesAll));
  CHECK(renamed->name == "myflush");
}

TEST_CASE("a renamed container keeps its subcommands' rows; renamed local rows are refused",
          "[learned]") {
  // rename-command SCRIPT myscript: before, MYSCRIPT DEBUG took the container's (shared) row.
  const std::string script_subs = "*2\r\n" + entry("script|debug", 3, {"noscript"}, 0, 0, 0) +
                                  entry("script|load", 3, {"noscript", "stale"}, 0, 0, 0);
  REQUIRE(learn_command_info("*1\r\n" + entry("script", -2, {}, 0, 0, 0, script_subs), "MYSCRIPT"));
  const CommandSpec* debug = find_subcommand(*find_command("myscript"), "DEBUG");
  REQUIRE(debug);
  CHECK(debug->route == Route::refused);
  CHECK(debug->effect == Effect::connection);
  CHECK(find_subcommand(*find_command("myscript"), "load")->route == Route::shared);
  // rename-command SELECT myselect: Corral's SELECT handler goes by name; Redis's SELECT on a
  // shared connection would move every client to that database.
  REQUIRE(learn_command_info("*1\r\n" + entry("select", 2, {"loading"}, 0, 0, 0), "myselect"));
  CHECK(find_command("myselect")->route == Route::refused);

  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"MYSCRIPT", "DEBUG", "YES"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR"));
  CHECK(client.send({"myselect", "1"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR"));
  CHECK(client.send({"MYSCRIPT", "LOAD", "return 1"}) == Action::done);
  CHECK(proxy.links.shared_of(0).bytes() ==
        std::vector<std::string>{wire({"MYSCRIPT", "LOAD", "return 1"})});
}

TEST_CASE("a learned command in Redis's @dangerous category is refused unless allowed",
          "[learned]") {
  std::string dangerous = "*1\r\n*10\r\n";
  resp::append_bulk(dangerous, "newdanger");
  dangerous += ":1\r\n*0\r\n:0\r\n:0\r\n:0\r\n*1\r\n+@dangerous\r\n*0\r\n*0\r\n*0\r\n";
  publish_learned_commands(learn_commands(dangerous));
  const CommandSpec* learned = find_command("newdanger");
  REQUIRE(learned);
  CHECK((learned->flags & kDangerous));
  CHECK(learned->route == Route::dedicated);  // once allowed
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"NEWDANGER"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR"));
  CHECK(proxy.links.shared.count(0) == 0);  // nothing reached a shared connection
  CHECK(proxy.links.dedicated.empty());
}

TEST_CASE("a learned command shares a connection only when its flags say it only reads keys",
          "[learned]") {
  const auto learned = learn_commands(
      "*7\r\n" + entry("ro.get", 2, {"readonly", "fast"}, 1, 1, 1, "*0\r\n", kReadSpecs) +
      entry("ro.nospecs", 2, {"readonly"}, 1, 1, 1) +
      entry("ro.rwspec", 2, {"readonly"}, 1, 1, 1, "*0\r\n",
            "*1\r\n" + key_spec({"RW", "ACCESS"})) +
      entry("ro.nokeys", 1, {"readonly"}, 0, 0, 0, "*0\r\n", kReadSpecs) +
      entry("ro.movable", -2, {"readonly", "movablekeys"}, 1, 1, 1, "*0\r\n", kReadSpecs) +
      entry("ro.blocking", 3, {"readonly", "blocking"}, 1, 1, 1, "*0\r\n", kReadSpecs) +
      entry("ro.admin", 2, {"readonly", "admin"}, 1, 1, 1, "*0\r\n", kReadSpecs));
  REQUIRE(learned);
  CHECK(learned->rows().size() == 7);
  for (const CommandSpec& row : learned->rows()) {
    INFO(row.name);
    CHECK(effect_rule_violation(row).empty());
    const bool shares = row.name == "ro.get";
    CHECK((row.route == Route::shared) == shares);
    CHECK((row.effect == Effect::reply) == shares);
    CHECK((row.effect == Effect::unknown) == !shares);
  }
}
