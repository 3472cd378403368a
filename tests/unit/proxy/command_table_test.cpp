// Unit tests of the command table: lookups, arity, key extraction for every KeySpec, and sanity
// checks over the generated rows (the data itself comes from scripts/gen_command_table.py).
#include "proxy/commands/command_table.hpp"

#include <catch2/catch.hpp>

#include <cctype>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace corral::proxy {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const CommandSpec& must_find(std::string_view name) {
  const CommandSpec* spec = find_command(name);
  REQUIRE(spec != nullptr);
  return *spec;
}

const CommandSpec& must_find_sub(std::string_view name, std::string_view sub) {
  const CommandSpec* spec = find_subcommand(must_find(name), sub);
  REQUIRE(spec != nullptr);
  return *spec;
}

// Key indices of argv, looked up by argv[0] (and argv[1] when argv[0] is a container).
std::vector<std::size_t> keys(std::initializer_list<std::string_view> args) {
  const std::vector<std::string_view> argv(args);
  const CommandSpec* spec = find_command(argv.at(0));
  REQUIRE(spec != nullptr);
  if (!subcommands(*spec).empty() && argv.size() > 1) spec = find_subcommand(*spec, argv[1]);
  REQUIRE(spec != nullptr);
  std::vector<std::size_t> out{999};  // key_indices clears it
  key_indices(*spec, argv, out);
  return out;
}

using Idx = std::vector<std::size_t>;

bool has(const CommandSpec& spec, std::uint32_t flag) { return (spec.flags & flag) != 0; }

}  // namespace

TEST_CASE("find_command is case-insensitive and returns lower-case rows", "[command_table]") {
  const CommandSpec& get = must_find("get");
  CHECK(get.name == "get");
  CHECK(find_command("GET") == &get);
  CHECK(find_command("gEt") == &get);
  CHECK(must_find("ZunionStore").name == "zunionstore");
  CHECK(must_find("CORRAL.info").name == "corral.info");
}

TEST_CASE("unknown names are not found", "[command_table]") {
  CHECK(find_command("") == nullptr);
  CHECK(find_command("nosuchcommand") == nullptr);
  CHECK(find_command("get ") == nullptr);
  CHECK(find_command("ge") == nullptr);
  CHECK(find_command(std::string_view("get\0", 4)) == nullptr);
  CHECK(find_command("g\xc3\xa9t") == nullptr);
  CHECK(find_command(std::string(kMaxCommandName + 1, 'a')) == nullptr);
  CHECK(find_command(std::string(100000, 'G')) == nullptr);
  // Subcommand rows are not top-level commands.
  CHECK(find_command("client|kill") == nullptr);
  CHECK(find_command("CLIENT|SETNAME") == nullptr);
}

TEST_CASE("find_subcommand resolves container subcommands", "[command_table]") {
  const CommandSpec& client = must_find("CLIENT");
  const CommandSpec* setname = find_subcommand(client, "SetName");
  REQUIRE(setname != nullptr);
  CHECK(setname->name == "client|setname");
  CHECK(setname->arity == 3);
  CHECK(setname->route == Route::local);
  CHECK(must_find_sub("config", "GET").name == "config|get");
  CHECK(must_find_sub("cluster", "count-failure-reports").name == "cluster|count-failure-reports");
  CHECK(must_find_sub("object", "encoding").first_key == 2);

  CHECK(find_subcommand(client, "nosuch") == nullptr);
  CHECK(find_subcommand(client, "") == nullptr);
  CHECK(find_subcommand(client, "setname|x") == nullptr);
  CHECK(find_subcommand(client, std::string(40, 'x')) == nullptr);
  CHECK(find_subcommand(must_find("get"), "setname") == nullptr);
}

TEST_CASE("subcommands() spans exactly a container's rows", "[command_table]") {
  const auto subs = subcommands(must_find("client"));
  REQUIRE(subs.size() >= 15);
  for (const CommandSpec& s : subs) CHECK(s.name.starts_with("client|"));
  CHECK(subcommands(must_find("get")).empty());
  CHECK(subcommands(must_find_sub("client", "id")).empty());
  CHECK(subcommands(must_find("corral.stats")).empty());
}

TEST_CASE("command_id is the index in all_commands", "[command_table]") {
  const auto rows = all_commands();
  for (std::size_t i = 0; i < rows.size(); ++i) REQUIRE(command_id(rows[i]) == i);
  CHECK(&rows[command_id(must_find("set"))] == &must_find("set"));
}

TEST_CASE("arity_ok follows the Redis convention", "[command_table]") {
  const CommandSpec& get = must_find("get");  // 2
  CHECK_FALSE(arity_ok(get, 0));
  CHECK_FALSE(arity_ok(get, 1));
  CHECK(arity_ok(get, 2));
  CHECK_FALSE(arity_ok(get, 3));
  const CommandSpec& mset = must_find("mset");  // -3
  CHECK_FALSE(arity_ok(mset, 2));
  CHECK(arity_ok(mset, 3));
  CHECK(arity_ok(mset, 1000));
  CHECK(arity_ok(must_find("ping"), 1));  // -1
  CHECK(arity_ok(must_find_sub("client", "setname"), 3));
  CHECK_FALSE(arity_ok(must_find_sub("client", "setname"), 2));
  CHECK(arity_ok(must_find("corral.rollover"), 3));
  CHECK(arity_ok(must_find("corral.rollover"), 4));
  CHECK_FALSE(arity_ok(must_find("corral.purge"), 2));
}

TEST_CASE("key_indices: fixed positions", "[command_table]") {
  CHECK(keys({"GET", "k"}) == Idx{1});
  CHECK(keys({"get"}).empty());            // arity
  CHECK(keys({"get", "a", "b"}).empty());  // arity
  CHECK(keys({"SET", "k", "v", "EX", "10"}) == Idx{1});
  CHECK(keys({"del", "a", "b", "c", "d"}) == Idx{1, 2, 3, 4});
  CHECK(keys({"rename", "a", "b"}) == Idx{1, 2});
  CHECK(keys({"BLPOP", "a", "b", "0"}) == Idx{1, 2});  // last_key -2: the timeout is not a key
  CHECK(keys({"ping"}).empty());
  CHECK(keys({"OBJECT", "ENCODING", "k"}) == Idx{2});
  CHECK(keys({"pfdebug", "getreg", "k"}) == Idx{2});
}

TEST_CASE("key_indices: MSET steps over values", "[command_table]") {
  CHECK(keys({"MSET", "a", "1", "b", "2", "c", "3"}) == Idx{1, 3, 5});
  CHECK(keys({"msetnx", "a", "1"}) == Idx{1});
  CHECK(keys({"MSET", "a", "1", "b"}).empty());  // a key without its value
  CHECK(keys({"MSET", "a"}).empty());
}

TEST_CASE("key_indices: numkeys commands", "[command_table]") {
  CHECK(keys({"EVAL", "return 1", "2", "a", "b", "arg"}) == Idx{3, 4});
  CHECK(keys({"evalsha", "abc", "0", "arg"}).empty());
  CHECK(keys({"EVAL_RO", "s", "1", "k"}) == Idx{3});
  CHECK(keys({"fcall", "f", "1", "k", "a"}) == Idx{3});
  CHECK(keys({"ZUNION", "2", "a", "b", "WITHSCORES"}) == Idx{2, 3});
  CHECK(keys({"sintercard", "2", "a", "b", "LIMIT", "1"}) == Idx{2, 3});
  CHECK(keys({"LMPOP", "1", "l", "LEFT"}) == Idx{2});
  CHECK(keys({"BLMPOP", "0.5", "2", "a", "b", "LEFT", "COUNT", "2"}) == Idx{3, 4});
  CHECK(keys({"bzmpop", "0", "1", "z", "MIN"}) == Idx{3});
  CHECK(keys({"ZUNIONSTORE", "dst", "2", "a", "b", "WEIGHTS", "1", "2"}) == Idx{1, 3, 4});
  CHECK(keys({"zinterstore", "dst", "1", "a"}) == Idx{1, 3});
  CHECK(keys({"ZDIFFSTORE", "dst", "2", "a", "b"}) == Idx{1, 3, 4});
}

TEST_CASE("key_indices: malformed numkeys gives no keys", "[command_table]") {
  for (std::string_view n : {"x", "-1", "3", "+1", " 1", "1 ", "", "1.0", "0x1",
                             "99999999999999999999999999", "18446744073709551615"}) {
    INFO("numkeys '" << n << "'");
    CHECK(keys({"EVAL", "s", n, "a", "b"}).empty());
    CHECK(keys({"ZUNIONSTORE", "dst", n, "a", "b"}).empty());
    CHECK(keys({"ZUNION", n, "a", "b"}).empty());
  }
}

TEST_CASE("key_indices: XREAD and XREADGROUP STREAMS", "[command_table]") {
  CHECK(keys({"XREAD", "STREAMS", "a", "0"}) == Idx{2});
  CHECK(keys({"xread", "COUNT", "10", "BLOCK", "0", "streams", "a", "b", "0", "$"}) == Idx{6, 7});
  // Group and consumer named like keywords are skipped, not mistaken for STREAMS.
  CHECK(keys({"XREADGROUP", "GROUP", "streams", "streams", "NOACK", "STREAMS", "k", ">"}) ==
        Idx{6});
  CHECK(keys({"XREAD", "STREAMS", "a", "b", "0"}).empty());  // keys and ids do not pair up
  CHECK(keys({"XREAD", "COUNT", "1", "a", "0"}).empty());    // no STREAMS
  CHECK(keys({"XREAD", "COUNT", "1", "BLOCK"}).empty());     // option runs off the end
  CHECK(keys({"XREAD", "BLOCK", "0", "STREAMS"}).empty());
}

TEST_CASE("key_indices: SORT, MIGRATE and GEORADIUS", "[command_table]") {
  CHECK(keys({"SORT", "k"}) == Idx{1});
  CHECK(keys({"SORT", "k", "BY", "w_*", "LIMIT", "0", "10", "GET", "store", "STORE", "dst"}) ==
        Idx{1, 10});
  CHECK(keys({"sort", "k", "STORE", "a", "store", "b"}) == Idx{1, 5});  // the last STORE wins
  CHECK(keys({"sort", "k", "STORE"}) == Idx{1});                        // STORE without a key
  CHECK(keys({"SORT_RO", "k", "STORE", "d"}) == Idx{1});  // no STORE in the read-only form

  CHECK(keys({"MIGRATE", "h", "6379", "k", "0", "5000"}) == Idx{3});
  CHECK(keys({"MIGRATE", "h", "6379", "", "0", "5000", "COPY", "AUTH", "keys", "KEYS", "a", "b"}) ==
        Idx{10, 11});
  CHECK(keys({"migrate", "h", "1", "", "0", "5", "AUTH2", "keys", "keys", "KEYS", "a"}) == Idx{10});
  CHECK(keys({"MIGRATE", "h", "6379", "k", "0", "5000", "KEYS", "a"}).empty());

  CHECK(keys({"GEORADIUS", "k", "0", "0", "1", "km"}) == Idx{1});
  CHECK(keys({"GEORADIUS", "k", "0", "0", "1", "km", "STORE", "d"}) == Idx{1, 7});
  CHECK(keys({"georadiusbymember", "k", "m", "1", "km", "STOREDIST", "d"}) == Idx{1, 6});
  CHECK(keys({"GEORADIUS", "k", "0", "0", "1", "km", "STORE"}) == Idx{1});
}

TEST_CASE("key_indices never leaves argv, whatever the arguments", "[command_table]") {
  // Words that steer the movable-key parsers, in every short combination.
  const std::vector<std::string_view> words{"1",    "2",     "0",     "-1", "streams", "store",
                                            "keys", "block", "group", "",   "auth2",   "limit"};
  std::vector<std::size_t> out;
  std::vector<std::string_view> argv;
  for (const CommandSpec& spec : all_commands()) {
    for (std::size_t argc = 0; argc <= 7; ++argc) {
      for (std::size_t seed = 0; seed < 40; ++seed) {
        argv.assign(argc, "x");
        if (argc > 0) argv[0] = spec.name;
        for (std::size_t i = 1; i < argc; ++i)
          argv[i] = words[(seed * 7 + i * seed + i) % words.size()];
        key_indices(spec, argv, out);
        for (std::size_t k : out) {
          INFO(spec.name << " argc " << argc << " seed " << seed);
          REQUIRE(k >= 1);
          REQUIRE(k < argc);
        }
      }
    }
  }
}

TEST_CASE("table sanity", "[command_table]") {
  const auto rows = all_commands();
  std::set<std::string_view> names;
  std::size_t top_level = 0;
  std::string_view container;
  for (const CommandSpec& row : rows) {
    INFO(row.name);
    REQUIRE(!row.name.empty());
    CHECK(row.name.size() <= kMaxCommandName);
    CHECK(names.insert(row.name).second);
    for (char c : row.name) CHECK_FALSE((c >= 'A' && c <= 'Z'));
    CHECK(row.arity != 0);
    CHECK_FALSE((has(row, kWrite) && has(row, kReadOnly)));
    // CLIENT KILL, PAUSE, UNPAUSE and MONITOR act on or show Corral's clients and still need
    // allow_commands.
    if (row.name != "client|kill" && row.name != "client|pause" && row.name != "client|unpause" &&
        row.name != "monitor") {
      CHECK_FALSE((row.route == Route::local && has(row, kDangerous)));
    }
    CHECK(has(row, kMovableKeys) == (row.key_spec != KeySpec::positions));
    if (row.first_key == 0) {
      CHECK(row.last_key == 0);
      CHECK(row.key_step == 0);
    } else {
      CHECK(row.first_key > 0);
      CHECK(row.key_step > 0);
    }
    const auto bar = row.name.find('|');
    if (bar == std::string_view::npos) {
      ++top_level;
      container = row.name;
      CHECK(find_command(upper(row.name)) == &row);
    } else {
      // Subcommands follow their container directly.
      CHECK(row.name.substr(0, bar) == container);
      CHECK(find_subcommand(must_find(container), upper(row.name.substr(bar + 1))) == &row);
    }
  }
  CHECK(top_level >= 230);
  CHECK(rows.size() > top_level + 100);
}

TEST_CASE("Corral's flags", "[command_table]") {
  for (auto name : {"multi", "exec", "discard", "watch", "unwatch"}) {
    CHECK(has(must_find(name), kTransaction));
  }
  for (auto name : {"blpop", "brpoplpush", "blmpop", "bzpopmin", "xread", "xreadgroup", "wait"}) {
    CHECK(has(must_find(name), kBlocking));
  }
  for (auto name :
       {"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"}) {
    CHECK(has(must_find(name), kPubSub));
  }
  CHECK_FALSE(has(must_find("publish"), kPubSub));
  CHECK_FALSE(has(must_find_sub("pubsub", "channels"), kPubSub));

  for (auto name :
       {"flushall", "flushdb", "config", "debug", "shutdown", "replicaof", "slaveof", "failover",
        "module", "save", "bgsave", "bgrewriteaof", "sync", "psync", "migrate", "swapdb"}) {
    CHECK(has(must_find(name), kDangerous));
  }
  for (const CommandSpec& sub : subcommands(must_find("config"))) CHECK(has(sub, kDangerous));
  CHECK(has(must_find_sub("acl", "setuser"), kDangerous));
  CHECK(has(must_find_sub("client", "kill"), kDangerous));
  CHECK(has(must_find_sub("cluster", "reset"), kDangerous));
  CHECK(has(must_find_sub("function", "flush"), kDangerous));
  CHECK_FALSE(has(must_find_sub("cluster", "slots"), kDangerous));
  CHECK_FALSE(has(must_find_sub("acl", "whoami"), kDangerous));
  // The upstream's MONITOR shows every client's commands; its users and hashes are secrets.
  CHECK(has(must_find("monitor"), kDangerous));
  for (auto sub : {"list", "getuser", "users", "log", "dryrun"}) {
    CHECK(has(must_find_sub("acl", sub), kDangerous));
  }
  for (auto sub : {"cat", "genpass", "help"})
    CHECK_FALSE(has(must_find_sub("acl", sub), kDangerous));
  CHECK(must_find_sub("script", "debug").route == Route::refused);
  for (auto name : {"readonly", "readwrite", "asking"})
    CHECK(must_find(name).route == Route::local);
  for (auto name : {"ping", "echo", "select"}) CHECK(has(must_find(name), kQueuedInMulti));
  for (auto name : {"auth", "hello", "info", "command"}) {
    CHECK_FALSE(has(must_find(name), kQueuedInMulti));
  }
  // Inside MULTI, INFO and COMMAND reach a one-server upstream and get Corral's part merged in;
  // on a partitioned one COMMAND is answered from the table and INFO is refused.
  CHECK(has(must_find("info"), kMergedAtExec));
  CHECK_FALSE(has(must_find("info"), kRunsAtExec));
  for (auto sub : {"count", "info", "list", "docs", "getkeys", "getkeysandflags"}) {
    CHECK(has(must_find_sub("command", sub), kMergedAtExec));
    CHECK(has(must_find_sub("command", sub), kRunsAtExec));
  }
  for (auto name : {"auth", "hello", "monitor", "quit", "reset"}) {
    CHECK_FALSE(has(must_find(name), kMergedAtExec | kRunsAtExec));
  }
  CHECK_FALSE(has(must_find("lastsave"), kDangerous));
  CHECK_FALSE(has(must_find("get"), kDangerous));

  for (auto name :
       {"ping", "echo", "quit", "hello", "auth", "select", "command", "info", "reset"}) {
    CHECK(must_find(name).route == Route::local);
  }
  for (auto sub : {"setname", "getname", "id", "list", "info", "kill", "pause", "unpause"}) {
    CHECK(must_find_sub("client", sub).route == Route::local);
  }
  CHECK(must_find_sub("script", "kill").route == Route::out_of_band);
  CHECK(must_find_sub("function", "kill").route == Route::out_of_band);
  CHECK(must_find("shutdown").route == Route::out_of_band);
  for (auto sub : {"count", "info", "docs", "list", "getkeys"}) {
    CHECK(must_find_sub("command", sub).route == Route::local);
  }
  CHECK(must_find("client").route == Route::shared);
  CHECK(must_find_sub("client", "getredir").route == Route::shared);
  CHECK(must_find("get").route == Route::shared);

  for (auto name : {"auth", "hello", "quit"}) CHECK(has(must_find(name), kNoAuth));
  CHECK_FALSE(has(must_find("get"), kNoAuth));

  // Scripts may write their keys, so their cached entries must be invalidated.
  CHECK(has(must_find("eval"), kWrite));
  CHECK(has(must_find("fcall"), kWrite));
  CHECK(has(must_find("eval_ro"), kReadOnly));

  CHECK((must_find("get").flags & (kReadOnly | kFast)) == (kReadOnly | kFast));
  CHECK(has(must_find("set"), kWrite));
}

TEST_CASE("The route column", "[command_table]") {
  for (auto name : {"multi", "watch", "blpop", "brpoplpush", "blmpop", "bzpopmin", "wait"}) {
    INFO(name);
    CHECK(must_find(name).route == Route::dedicated);
  }
  for (auto sub : {"tracking", "no-evict", "caching"}) {
    CHECK(must_find_sub("client", sub).route == Route::dedicated);
  }
  for (auto name : {"xread", "xreadgroup"}) {
    CHECK(must_find(name).route == Route::blocking_if_argument);
  }
  for (auto name : {"subscribe", "psubscribe", "ssubscribe"}) {
    CHECK(must_find(name).route == Route::tunnel);
  }
  CHECK(must_find("monitor").route == Route::local);
  CHECK(must_find_sub("client", "reply").route == Route::local);
  for (auto name : {"exec", "discard", "unwatch", "unsubscribe", "publish", "set", "flushall"}) {
    CHECK(must_find(name).route == Route::shared);
  }
  // Every blocking row holds a connection of its own, at least when asked to block.
  for (const CommandSpec& row : all_commands()) {
    if (has(row, kBlocking)) {
      INFO(row.name);
      CHECK((row.route == Route::dedicated || row.route == Route::blocking_if_argument));
    }
  }
}

TEST_CASE("The connection-state column", "[command_table]") {
  struct Row {
    std::string_view name;
    StateChange change;
  };
  for (Row r : {Row{"multi", StateChange::multi}, Row{"exec", StateChange::exec},
                Row{"discard", StateChange::discard}, Row{"watch", StateChange::watch},
                Row{"unwatch", StateChange::unwatch}, Row{"monitor", StateChange::none},
                Row{"subscribe", StateChange::subscribe}, Row{"psubscribe", StateChange::subscribe},
                Row{"ssubscribe", StateChange::subscribe}, Row{"select", StateChange::select},
                Row{"quit", StateChange::quit}, Row{"reset", StateChange::reset},
                Row{"get", StateChange::none}, Row{"unsubscribe", StateChange::none}}) {
    INFO(r.name);
    CHECK(must_find(r.name).change == r.change);
  }
  CHECK(must_find_sub("client", "tracking").change == StateChange::tracking);
  CHECK(must_find_sub("client", "no-evict").change == StateChange::no_evict);
  CHECK(must_find_sub("client", "reply").change == StateChange::reply_mode);
  for (auto name : {"del", "unlink"}) CHECK(has(must_find(name), kDeletesKeys));
  for (auto name : {"flushdb", "flushall"}) CHECK(has(must_find(name), kFlushesAll));
  CHECK_FALSE(has(must_find("set"), kDeletesKeys | kFlushesAll));
}

TEST_CASE("CORRAL.* admin commands", "[command_table]") {
  struct Row {
    std::string_view name;
    int arity;
  };
  for (Row r : {Row{"CORRAL.INFO", 2}, Row{"CORRAL.INVALIDATE", -2}, Row{"CORRAL.STATS", 1},
                Row{"CORRAL.ROLLOVER", -3}, Row{"CORRAL.PURGE", 3}}) {
    INFO(r.name);
    const CommandSpec& spec = must_find(r.name);
    CHECK(spec.arity == r.arity);
    // Those that answer at once are queued inside MULTI and run at EXEC.
    CHECK((spec.flags & ~kRunsAtExec) == kAdmin);
    CHECK(spec.route == Route::local);
    CHECK(spec.first_key == 0);
  }
  CHECK(must_find("CORRAL.STATS").flags & kRunsAtExec);
  CHECK_FALSE(must_find("CORRAL.INVALIDATE").flags & kRunsAtExec);  // TAG asks Redis
  CHECK(find_command("corral") == nullptr);
}

}  // namespace corral::proxy
