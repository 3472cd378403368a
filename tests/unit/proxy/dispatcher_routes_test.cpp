// The dispatcher's routes, driven through the session seam against a recording upstream: local
// answers, shared and dedicated connections, tunnels, and the checks that refuse a request.
#include <catch2/catch.hpp>

#include "proxy/links/tunnel_barrier.hpp"
#include "recording_upstream.hpp"

namespace corral::proxy::test {

using session::Action;

TEST_CASE("local commands are answered without upstream traffic", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"PING"}) == Action::done);
  CHECK(client.reply() == "+PONG\r\n");
  CHECK(client.send({"ECHO", "hi"}) == Action::done);
  CHECK(client.reply() == "$2\r\nhi\r\n");
  CHECK(client.send({"CLIENT", "SETNAME", "me"}) == Action::done);
  CHECK(client.send({"client", "getname"}) == Action::done);
  CHECK(client.reply() == "$2\r\nme\r\n");
  CHECK(client.send({"QUIT"}) == Action::close_after_reply);
  CHECK(client.reply() == "+OK\r\n");
  CHECK(proxy.links.shared.empty());
  CHECK(proxy.links.dedicated.empty());
}

TEST_CASE("ordinary commands go to the shared connection of the client's database",
          "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"GET", "k"}) == Action::done);
  auto& shared = proxy.links.shared_of(0);
  REQUIRE(shared.sent.size() == 1);
  CHECK(shared.sent[0].bytes == wire({"GET", "k"}));
  CHECK(shared.sent[0].tag == client.tag);
  CHECK(shared.sent[0].tracked);
  CHECK_FALSE(shared.sent[0].exempt);
  shared.answer("$1\r\nv\r\n");
  CHECK(client.reply() == "$1\r\nv\r\n");
  // Each client keeps to one shared connection: its id is the affinity.
  Client other(proxy);
  CHECK(other.send({"GET", "k"}) == Action::done);
  REQUIRE(proxy.links.affinities.size() == 2);
  CHECK(proxy.links.affinities[0] == client.handler->client_id());
  CHECK(proxy.links.affinities[1] == other.handler->client_id());
  CHECK(proxy.links.affinities[0] != proxy.links.affinities[1]);
  // A local row without a handler of its own is Redis's to answer.
  CHECK(client.send({"COMMAND", "DOCS", "get"}) == Action::done);
  CHECK(shared.sent.size() == 3);
  CHECK(proxy.links.dedicated.empty());
}

TEST_CASE("a shared connection that cannot take the command fails it", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  proxy.links.shared_link(0).refuse = true;
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(client.failure() == "ERR upstream unavailable");
}

TEST_CASE("MULTI and WATCH take a dedicated connection", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"WATCH", "k"}) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 1);
  auto& dedicated = proxy.links.last_dedicated();
  CHECK(client.send({"MULTI"}) == Action::done);
  CHECK(client.send({"SET", "k", "v"}) == Action::done);
  // Inside MULTI even local commands are queued by Redis: their replies belong in EXEC's.
  CHECK(client.send({"PING"}) == Action::done);
  CHECK(client.send({"EXEC"}) == Action::done);
  CHECK(dedicated.bytes() == std::vector<std::string>{wire({"WATCH", "k"}), wire({"MULTI"}),
                                                      wire({"SET", "k", "v"}), wire({"PING"}),
                                                      wire({"EXEC"})});
  CHECK(proxy.links.dedicated.size() == 1);
  CHECK(proxy.links.shared.empty());
}

TEST_CASE("blocking commands take a dedicated connection, exempt from the timeout",
          "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"BLPOP", "list", "0"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  REQUIRE(dedicated.sent.size() == 1);
  CHECK(dedicated.sent[0].bytes == wire({"BLPOP", "list", "0"}));
  CHECK(dedicated.sent[0].exempt);
  CHECK(proxy.links.shared.empty());
}

TEST_CASE("XREAD blocks, and takes a dedicated connection, only with BLOCK", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"XREAD", "COUNT", "1", "STREAMS", "s", "0"}) == Action::done);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
  CHECK(proxy.links.dedicated.empty());
  proxy.links.shared_of(0).answer("*-1\r\n");

  CHECK(client.send({"XREAD", "block", "100", "STREAMS", "s", "$"}) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 1);
  CHECK(proxy.links.last_dedicated().sent.at(0).exempt);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);

  Client group(proxy);
  CHECK(group.send({"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}) == Action::done);
  CHECK(proxy.links.shared_of(0).sent.size() == 2);
  CHECK(group.send({"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"}, 1) ==
        Action::drain_then_retry);
}

TEST_CASE("SUBSCRIBE enters the tunnel until the last subscription ends", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK_FALSE(client.handler->tunneling());
  CHECK(client.send({"SUBSCRIBE", "news"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  CHECK(client.handler->tunneling());
  CHECK(dedicated.unsolicited == client.slots);
  REQUIRE(dedicated.sent.size() == 2);
  CHECK(dedicated.sent[0].tracked);
  CHECK(dedicated.sent[0].exempt);
  CHECK(dedicated.sent[1].bytes == barrier_request());  // did Redis subscribe it?
  CHECK_FALSE(dedicated.sent[1].tracked);
  CHECK(client.handler->takes_unsolicited(barrier_reply(true)));

  std::string reply;
  CHECK(client.tunnel({"UNSUBSCRIBE", "news"}, reply) == Action::done);
  CHECK(reply.empty());
  REQUIRE(dedicated.sent.size() == 4);
  CHECK_FALSE(dedicated.sent[2].tracked);
  CHECK(dedicated.sent[2].bytes == wire({"UNSUBSCRIBE", "news"}));
  CHECK(dedicated.sent[3].bytes == barrier_request());

  client.handler->on_unsolicited("*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n");
  client.handler->on_unsolicited("*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:0\r\n");
  CHECK(client.handler->tunneling());  // the barrier decides
  CHECK_FALSE(client.handler->takes_unsolicited("*2\r\n$4\r\npong\r\n$0\r\n\r\n"));
  CHECK(client.handler->takes_unsolicited(barrier_reply(false)));
  CHECK_FALSE(client.handler->tunneling());
  // Once idle and out of every mode, the client is back on the shared connection.
  dedicated.pending.clear();
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(dedicated.closes == 1);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
}

TEST_CASE("MONITOR is answered by Corral: +OK, then its clients' accepted commands",
          "[dispatcher]") {
  Proxy refusing;
  Client refused(refusing);
  CHECK(refused.send({"MONITOR"}) == Action::done);
  CHECK(refused.reply().starts_with("-ERR"));  // dangerous: refused unless allowed

  config::Settings settings;
  settings.client.allow_commands = {"monitor"};
  Proxy proxy(settings);
  std::vector<std::string> lines;
  // What the session does with a posted push: hands it to its reply path with tag 0.
  struct LineSink final : upstream::ReplyTarget {
    std::vector<std::string>& lines;
    explicit LineSink(std::vector<std::string>& out) : lines(out) {}
    void on_reply(std::uint64_t, std::string_view reply) override { lines.emplace_back(reply); }
    void on_failure(std::uint64_t, std::string_view) override {}
  } sink(lines);
  Client watcher(proxy);
  watcher.handler = proxy.dispatcher.open_session(
      session::Peer{"10.0.0.1:4000",
                    "127.0.0.1:6380",
                    [] {},
                    [](std::chrono::milliseconds) {},
                    [&](std::function<void(upstream::ReplyTarget&)> deliver) { deliver(sink); },
                    nullptr,
                    {}});
  CHECK(watcher.send({"MONITOR"}, 1) == Action::drain_then_retry);  // +OK before any line
  // +OK once the upstream's MONITOR (for the scripts' lines) runs, on a link of Corral's own.
  CHECK(watcher.send({"MONITOR"}) == Action::wait_then_retry);
  REQUIRE(proxy.links.dedicated.size() == 1);
  auto& upstream_monitor = proxy.links.last_dedicated();
  CHECK(upstream_monitor.bytes() == std::vector<std::string>{"*1\r\n$7\r\nMONITOR\r\n"});
  CHECK(watcher.retry({"MONITOR"}) == Action::wait_then_retry);  // not yet answered
  upstream_monitor.answer("+OK\r\n");
  CHECK(watcher.retry({"MONITOR"}) == Action::done);
  CHECK(watcher.reply() == "+OK\r\n");
  CHECK(proxy.links.dedicated.size() == 1);  // the client's own commands stay on shared links
  CHECK_FALSE(watcher.handler->tunneling());

  Client other(proxy);
  CHECK(other.send({"SET", "k", "v"}) == Action::done);
  CHECK(other.send({"SELECT", "2"}) == Action::done);
  CHECK(other.send({"CONFIG", "GET", "x"}) == Action::done);  // refused: not shown
  other.send({"NOSUCH"});                      // unknown (asked of the upstream first): not shown
  CHECK(other.send({"GET"}) == Action::done);  // wrong arity: not shown
  // Without a password of Corral's own the upstream checks it; shown as it is sent, like Redis.
  CHECK(other.send({"AUTH", "secret"}) == Action::wait_then_retry);
  proxy.links.last_dedicated().answer("+OK\r\n");
  CHECK(other.retry({"AUTH", "secret"}) == Action::done);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].ends_with(" [0 ] \"SET\" \"k\" \"v\"\r\n"));
  CHECK(lines[1].ends_with(" [2 ] \"SELECT\" \"2\"\r\n"));
  CHECK(lines[2].ends_with(" [2 ] \"AUTH\" \"(redacted)\"\r\n"));

  // A script's calls, relayed from the upstream's MONITOR after its line; not another client's.
  CHECK(other.send({"EVAL", "return redis.call('get','k')", "0"}) == Action::done);
  const std::string script_args = "\"EVAL\" \"return redis.call('get','k')\" \"0\"";
  const std::string call = "+1.000000 [0 lua] \"get\" \"k\"\r\n";
  upstream_monitor.unsolicited->on_reply(0, "+1.000000 [0 127.0.0.1:7000] " + script_args + "\r\n");
  upstream_monitor.unsolicited->on_reply(0, call);
  REQUIRE(lines.size() == 4);  // the EVAL only: 127.0.0.1:7000 is no connection of Corral's
  CHECK(lines[3].ends_with(" [2 ] " + script_args + "\r\n"));

  watcher.handler->end_session();
  CHECK(other.send({"PING"}) == Action::done);
  CHECK(lines.size() == 4);
  upstream_monitor.unsolicited->on_failure(0, "ERR upstream connection lost");  // the next test's
}

TEST_CASE("QUIT in the tunnel closes the client without reaching Redis", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"PSUBSCRIBE", "n*"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  std::string reply;
  CHECK(client.tunnel({"quit"}, reply) == Action::close_after_reply);
  CHECK(reply == "+OK\r\n");
  CHECK(dedicated.sent.size() == 2);  // PSUBSCRIBE and its barrier

  // A tunnel whose connection died cannot carry requests any more.
  dedicated.die();
  reply.clear();
  CHECK(client.tunnel({"PING"}, reply) == Action::close_after_reply);
  CHECK(reply == "-ERR upstream connection lost\r\n");
}

TEST_CASE("CLIENT REPLY OFF and SKIP withhold replies; commands keep their connections",
          "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"CLIENT", "SETNAME", "me"}) == Action::done);
  CHECK(client.send({"CLIENT", "REPLY", "OFF"}) == Action::done);
  CHECK(client.slots->replies.count(client.tag) == 1);  // filled with nothing: the pipeline moves
  CHECK(client.reply().empty());
  // A write still runs on the shared connection; its slot is filled, empty, once Redis answers.
  CHECK(client.send({"SET", "k", "v"}) == Action::done);
  auto& shared = proxy.links.shared_of(0);
  REQUIRE(shared.sent.size() == 1);
  CHECK(shared.sent[0].bytes == wire({"SET", "k", "v"}));
  CHECK(client.slots->replies.count(client.tag) == 0);
  shared.answer("+OK\r\n");
  CHECK(client.slots->replies.count(client.tag) == 1);
  CHECK(client.reply().empty());
  CHECK(proxy.links.dedicated.empty());
  CHECK_FALSE(client.handler->tunneling());
  // Corral still answers its own commands, about this client, and withholds the answer.
  CHECK(client.send({"CLIENT", "GETNAME"}) == Action::done);
  CHECK(client.reply().empty());
  CHECK(client.send({"CLIENT", "REPLY", "ON"}) == Action::done);
  CHECK(client.reply() == "+OK\r\n");
  // SKIP withholds the next reply only, whoever answers it.
  CHECK(client.send({"CLIENT", "REPLY", "SKIP"}) == Action::done);
  CHECK(client.reply().empty());
  CHECK(client.send({"CLIENT", "GETNAME"}) == Action::done);
  CHECK(client.reply().empty());
  CHECK(client.send({"CLIENT", "GETNAME"}) == Action::done);
  CHECK(client.reply() == "$2\r\nme\r\n");
  CHECK(shared.sent.size() == 1);  // CLIENT REPLY never reaches Redis
}

TEST_CASE("CLIENT REPLY follows Redis: SKIP while OFF is a no-op, RESET answers even OFF",
          "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"CLIENT", "REPLY", "OFF"}) == Action::done);
  CHECK(client.send({"CLIENT", "REPLY", "SKIP"}) == Action::done);
  CHECK(client.send({"PING"}) == Action::done);
  CHECK(client.reply().empty());
  CHECK(client.send({"PING"}) == Action::done);
  CHECK(client.reply().empty());  // still OFF
  CHECK(client.send({"RESET"}) == Action::done);
  CHECK(client.reply() == "+RESET\r\n");
  CHECK(client.send({"PING"}) == Action::done);
  CHECK(client.reply() == "+PONG\r\n");
  CHECK(client.send({"CLIENT", "REPLY", "SKIP"}) == Action::done);
  CHECK(client.send({"RESET"}) == Action::done);
  CHECK(client.reply().empty());  // a skipped RESET is silent
  CHECK(client.send({"CLIENT", "REPLY", "MAYBE"}) == Action::done);
  CHECK(client.reply() == "-ERR syntax error\r\n");
}

TEST_CASE("AUTH gates every other command when client.password is set", "[dispatcher]") {
  config::Settings settings;
  settings.client.password = "secret";
  Proxy proxy(settings);
  Client client(proxy);
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(client.reply() == "-NOAUTH Authentication required.\r\n");
  CHECK(client.send({"MULTI"}) == Action::done);
  CHECK(client.reply() == "-NOAUTH Authentication required.\r\n");
  CHECK(client.send({"AUTH", "wrong"}) == Action::done);
  CHECK(client.reply().starts_with("-WRONGPASS"));
  // An unknown name is not asked of the upstream before AUTH.
  CHECK(client.send({"NOSUCHNAME"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR unknown command"));
  CHECK(proxy.links.shared.empty());
  CHECK(proxy.links.dedicated.empty());

  CHECK(client.send({"AUTH", "secret"}) == Action::done);
  CHECK(client.reply() == "+OK\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
}

TEST_CASE("dangerous commands are refused unless allowed", "[dispatcher]") {
  SECTION("refused by default") {
    Proxy proxy;
    Client client(proxy);
    CHECK(client.send({"FLUSHALL"}) == Action::done);
    CHECK(client.reply() ==
          "-ERR command 'flushall' is not allowed through this proxy (see "
          "client.allow_commands)\r\n");
    CHECK(client.send({"CONFIG", "GET", "maxmemory"}) == Action::done);
    CHECK(client.reply().starts_with("-ERR command 'config|get' is not allowed"));
    CHECK(proxy.links.shared.empty());
  }
  SECTION("allowed when listed in client.allow_commands") {
    config::Settings settings;
    settings.client.allow_commands = {"FLUSHALL", "CONFIG GET"};
    Proxy proxy(settings);
    Client client(proxy);
    CHECK(client.send({"FLUSHALL"}) == Action::done);
    CHECK(client.send({"config", "get", "maxmemory"}) == Action::done);
    CHECK(proxy.links.shared_of(0).bytes() ==
          std::vector<std::string>{wire({"FLUSHALL"}), wire({"config", "get", "maxmemory"})});
    CHECK(client.send({"CONFIG", "SET", "maxmemory", "1"}) == Action::done);
    CHECK(client.reply().starts_with("-ERR command 'config|set' is not allowed"));
  }
}

TEST_CASE("allow_commands: a container allows every subcommand, a subcommand only itself",
          "[dispatcher]") {
  config::Settings settings;
  settings.client.allow_commands = {"CONFIG", "SCRIPT|FLUSH"};
  Proxy proxy(settings);
  Client client(proxy);
  CHECK(client.send({"CONFIG", "SET", "maxmemory", "1"}) == Action::done);
  CHECK(client.send({"config", "resetstat"}) == Action::done);
  CHECK(client.send({"SCRIPT", "FLUSH"}) == Action::done);
  CHECK(proxy.links.shared_of(0).bytes().size() == 3);
  CHECK(client.send({"SCRIPT", "KILL"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR command 'script|kill' is not allowed"));
}

TEST_CASE("CORRAL.ROLLOVER without a pool answers unavailable", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"CORRAL.ROLLOVER", "p:", "2"}) == Action::done);
  CHECK(client.failure() == "ERR upstream unavailable");
  CHECK(proxy.links.shared.empty());
}

TEST_CASE("unknown commands and wrong arity are answered by Corral", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  // The upstream is asked first (it may know a renamed command); it does not.
  CHECK(client.send({"NOSUCH", "a"}) == Action::wait_then_retry);
  CHECK(proxy.links.shared_of(0).bytes() ==
        std::vector<std::string>{wire({"COMMAND", "INFO", "NOSUCH"})});
  CHECK(client.retry({"NOSUCH", "a"}) == Action::wait_then_retry);
  proxy.links.shared_of(0).answer("*1\r\n*-1\r\n");
  CHECK(client.retry({"NOSUCH", "a"}) == Action::done);
  CHECK(client.reply() == "-ERR unknown command 'NOSUCH', with args beginning with: 'a' \r\n");
  // Remembered: not asked again.
  CHECK(client.send({"nosuch"}) == Action::done);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
  CHECK(client.send({"GET"}) == Action::done);
  CHECK(client.reply() == "-ERR wrong number of arguments for 'get' command\r\n");
  CHECK(client.send({"CLIENT", "SETNAME"}) == Action::done);
  CHECK(client.reply() == "-ERR wrong number of arguments for 'client|setname' command\r\n");
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
}

TEST_CASE("a name no command can have is unknown without asking the upstream", "[dispatcher]") {
  // Redis finds "GET\0X" as GET in COMMAND INFO when the hashes meet (strcasecmp stops at the
  // NUL); learning that would make the name run GET.
  Proxy proxy;
  Client client(proxy);
  for (std::string name : {std::string("GET\0X", 5), std::string("GET X"),
                           std::string("g\xff"
                                       "et"),
                           std::string("GET\r\n")}) {
    CHECK(client.send({name, "k"}) == Action::done);
    CHECK(client.reply().starts_with("-ERR unknown command"));
  }
  CHECK(proxy.links.shared.empty());
}

}  // namespace corral::proxy::test
