// The client's connection modes through the dispatcher: transactions (and their abort), the
// release of an idle dedicated connection, SELECT, draining before a switch, lost connections.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "recording_upstream.hpp"

namespace corral::proxy::test {

using session::Action;

TEST_CASE("a command refused inside MULTI makes EXEC abort and discard upstream", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  dedicated.answer("+OK\r\n");
  CHECK(client.send({"FLUSHALL"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR command 'flushall' is not allowed"));
  CHECK(client.send({"SET", "k", "v"}) == Action::done);
  dedicated.answer("+QUEUED\r\n");

  CHECK(client.send({"EXEC"}) == Action::done);
  const auto exec_tag = client.tag;
  REQUIRE(dedicated.sent.size() == 3);
  CHECK(dedicated.sent.back().bytes == wire({"DISCARD"}));
  CHECK(client.reply().empty());  // answered once Redis has discarded
  dedicated.answer("+OK\r\n");
  CHECK(client.reply_of(exec_tag) ==
        "-EXECABORT Transaction discarded because of previous errors.\r\n");

  // The transaction is over: the idle connection goes, later commands share.
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(dedicated.closes == 1);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
}

TEST_CASE("unknown commands and wrong arity inside MULTI abort it too", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  CHECK(client.send({"GET"}) == Action::done);
  CHECK(client.send({"EXEC"}) == Action::done);
  CHECK(dedicated.sent.back().bytes == wire({"DISCARD"}));
}

TEST_CASE("MULTI then EXEC releases the dedicated connection once idle", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  CHECK(client.send({"INCR", "n"}) == Action::done);
  CHECK(client.send({"EXEC"}) == Action::done);
  CHECK(dedicated.sent.back().bytes == wire({"EXEC"}));

  // Replies still outstanding: the next command stays on the dedicated connection, in order.
  CHECK(client.send({"GET", "n"}, 3) == Action::done);
  CHECK(dedicated.closes == 0);
  CHECK(dedicated.sent.back().bytes == wire({"GET", "n"}));
  for (int i = 0; i < 4; ++i) dedicated.answer("+OK\r\n");

  CHECK(client.send({"GET", "n"}) == Action::done);
  CHECK(dedicated.closes == 1);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
  // A later stateful command opens a fresh one.
  CHECK(client.send({"MULTI"}) == Action::done);
  CHECK(proxy.links.dedicated.size() == 2);
}

TEST_CASE("DISCARD ends the transaction; WATCH alone holds the connection", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"WATCH", "k"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  dedicated.answer("+OK\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);  // still watching: stays dedicated
  dedicated.answer("$-1\r\n");
  CHECK(dedicated.closes == 0);
  CHECK(client.send({"UNWATCH"}) == Action::done);
  dedicated.answer("+OK\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(dedicated.closes == 1);

  CHECK(client.send({"MULTI"}) == Action::done);
  auto& second = proxy.links.last_dedicated();
  CHECK(client.send({"DISCARD"}) == Action::done);
  second.answer("+OK\r\n");
  second.answer("+OK\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(second.closes == 1);
}

TEST_CASE("after SELECT a command waits for the ones in flight on the last database's link",
          "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"EVAL", "return 1", "0"}) == Action::done);  // in flight on database 0's
  CHECK(client.send({"SELECT", "2"}, 1) == Action::done);
  CHECK(client.reply() == "+OK\r\n");
  // Sent now on database 2's connection, it could reach Redis before the EVAL.
  CHECK(client.send({"SCRIPT", "EXISTS", "abc"}, 1) == Action::drain_then_retry);
  CHECK(proxy.links.shared.count(2) == 0);
  proxy.links.shared_of(0).answer(":1\r\n");
  CHECK(client.retry({"SCRIPT", "EXISTS", "abc"}) == Action::done);
  CHECK(proxy.links.shared_of(2).sent.size() == 1);
  // On the same connection, nothing waits.
  CHECK(client.send({"GET", "k"}, 1) == Action::done);
  CHECK(proxy.links.shared_of(2).sent.size() == 2);
}

TEST_CASE("SELECT changes the database of later shared sends", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"SELECT", "3"}) == Action::done);
  CHECK(client.reply() == "+OK\r\n");
  CHECK(proxy.links.shared.empty());
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(proxy.links.shared_of(3).sent.size() == 1);
  CHECK(proxy.links.shared.count(0) == 0);

  CHECK(client.send({"SELECT", "99"}) == Action::done);
  CHECK(client.reply() == "-ERR DB index is out of range\r\n");

  // Dedicated connections open on the current database; SELECT on one must reach Redis.
  CHECK(client.send({"WATCH", "k"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  CHECK(dedicated.database == 3);
  CHECK(client.send({"SELECT", "5"}) == Action::done);
  CHECK(dedicated.sent.back().bytes == wire({"SELECT", "5"}));
  CHECK(client.send({"UNWATCH"}) == Action::done);
  while (!dedicated.pending.empty()) dedicated.answer("+OK\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(proxy.links.shared_of(5).sent.size() == 1);
}

TEST_CASE("a dedicated route waits for earlier replies before switching", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"GET", "a"}) == Action::done);
  CHECK(client.send({"MULTI"}, 1) == Action::drain_then_retry);
  CHECK(proxy.links.dedicated.empty());
  CHECK(client.slots->replies.count(client.tag) == 0);
  proxy.links.shared_of(0).answer("$1\r\n1\r\n");
  CHECK(client.retry({"MULTI"}) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 1);
  CHECK(proxy.links.last_dedicated().sent.at(0).tag == client.tag);

  // RESET also waits: it drops upstream state.
  CHECK(client.send({"RESET"}, 1) == Action::drain_then_retry);
  CHECK(client.retry({"RESET"}) == Action::done);
  CHECK(client.reply() == "+RESET\r\n");
  CHECK(proxy.links.last_dedicated().closes == 1);
}

TEST_CASE("a dedicated connection lost while it held state fails the next command",
          "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  proxy.links.last_dedicated().die();
  CHECK(client.send({"SET", "k", "v"}) == Action::done);
  CHECK(client.failure() ==
        "ERR upstream connection lost; the transaction, WATCH or tracking state was discarded");
  // The client is still queueing: what it queues now must not run alone on another connection
  // (it would be applied and acknowledged outside the transaction), and EXEC aborts.
  CHECK(client.send({"INCR", "n"}) == Action::done);
  CHECK(client.reply() ==
        "-ERR upstream connection lost; the transaction, WATCH or tracking state was "
        "discarded\r\n");
  CHECK(client.send({"MULTI"}) == Action::done);
  CHECK(client.reply() == "-ERR MULTI calls can not be nested\r\n");
  CHECK(client.send({"EXEC"}) == Action::done);
  CHECK(client.reply() == "-EXECABORT Transaction discarded because of previous errors.\r\n");
  CHECK(proxy.links.shared.count(0) == 0);  // nothing went to Redis alone
  CHECK(proxy.links.dedicated.size() == 1);
  // The transaction is over: the client starts afresh on the shared connection.
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);

  Client discarding(proxy);
  CHECK(discarding.send({"MULTI"}) == Action::done);
  proxy.links.last_dedicated().die();
  CHECK(discarding.send({"SET", "k", "v"}) == Action::done);
  CHECK(discarding.send({"DISCARD"}) == Action::done);
  CHECK(discarding.reply() == "+OK\r\n");
  CHECK(discarding.send({"GET", "k"}) == Action::done);
  CHECK(proxy.links.shared_of(0).sent.size() == 2);

  Client watching(proxy);
  CHECK(watching.send({"WATCH", "k"}) == Action::done);
  proxy.links.last_dedicated().answer("+OK\r\n");
  proxy.links.last_dedicated().die();
  // MULTI on a lost WATCH opens a transaction that can only abort, like a watched key changed.
  CHECK(watching.send({"MULTI"}) == Action::done);
  CHECK(watching.reply() == "+OK\r\n");
  CHECK(watching.send({"SET", "k", "v"}) == Action::done);
  CHECK(watching.reply().starts_with("-ERR upstream connection lost"));
  CHECK(watching.send({"EXEC"}) == Action::done);
  CHECK(watching.reply().starts_with("-EXECABORT"));
  CHECK(proxy.links.shared_of(0).sent.size() == 2);
  const auto dedicated_before_blpop = proxy.links.dedicated.size();

  Client blocked(proxy);
  CHECK(blocked.send({"BLPOP", "l", "0"}) == Action::done);
  proxy.links.last_dedicated().die();
  // Nothing stateful was held: a fresh dedicated connection takes the next blocking call.
  CHECK(blocked.send({"BLPOP", "l", "0"}) == Action::done);
  CHECK(blocked.failure().empty());
  CHECK(proxy.links.dedicated.size() == dedicated_before_blpop + 2);
}

TEST_CASE("a WATCH that never reached Redis fails alone, not the client's next command",
          "[dispatcher]") {
  Proxy proxy;
  proxy.links.refuse_dedicated = true;  // the link takes nothing: the WATCH fails at once
  Client refused(proxy);
  CHECK(refused.send({"WATCH", "k"}) == Action::done);
  CHECK(refused.failure() == "ERR upstream unavailable");
  CHECK(refused.send({"GET", "k"}) == Action::done);
  CHECK(refused.failure().empty());
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
  CHECK(refused.send({"BLPOP", "l", "0"}) == Action::done);
  CHECK(refused.failure() == "ERR upstream unavailable");
  CHECK_FALSE(refused.handler->blocked());

  proxy.links.refuse_dedicated = false;
  proxy.links.unreachable_dedicated = true;  // taken, then failed: the connect never succeeds
  Client unreached(proxy);
  CHECK(unreached.send({"WATCH", "k"}) == Action::done);
  proxy.links.last_dedicated().die_failing("ERR upstream unavailable");
  CHECK(unreached.failure() == "ERR upstream unavailable");
  CHECK(unreached.send({"GET", "k"}) == Action::done);
  CHECK(unreached.failure().empty());
  CHECK(proxy.links.shared_of(0).sent.size() == 2);

  // A transaction that follows such a WATCH still opens doomed: a client that pipelined WATCH,
  // MULTI and its writes has not read the WATCH's error yet.
  Client pipelined(proxy);
  CHECK(pipelined.send({"WATCH", "k"}) == Action::done);
  proxy.links.last_dedicated().die_failing("ERR upstream unavailable");
  CHECK(pipelined.send({"MULTI"}) == Action::done);
  CHECK(pipelined.reply() == "+OK\r\n");
  CHECK(pipelined.send({"SET", "k", "v"}) == Action::done);
  CHECK(pipelined.reply().starts_with("-ERR upstream connection lost"));
  CHECK(pipelined.send({"EXEC"}) == Action::done);
  CHECK(pipelined.reply().starts_with("-EXECABORT"));
  CHECK(proxy.links.shared_of(0).sent.size() == 2);
}

TEST_CASE("CLIENT TRACKING holds the dedicated connection until turned off", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"CLIENT", "TRACKING", "on"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  dedicated.answer("+OK\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);
  dedicated.answer("$-1\r\n");
  CHECK(dedicated.sent.size() == 2);
  CHECK(client.send({"CLIENT", "TRACKING", "off"}) == Action::done);
  dedicated.answer("+OK\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(dedicated.closes == 1);
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
}

TEST_CASE("end_session closes the client's dedicated connection", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"BLPOP", "l", "0"}) == Action::done);
  client.handler->end_session();
  CHECK(proxy.links.last_dedicated().closes == 1);
}

namespace {
// MULTI, then `command`: refused by Corral, nothing of it sent, and EXEC aborts.
void check_refused_in_multi(std::initializer_list<std::string_view> command) {
  INFO(*command.begin());
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  dedicated.answer("+OK\r\n");
  CHECK(client.send(command) == Action::done);
  CHECK(client.reply().starts_with("-ERR command '"));
  CHECK(client.reply().find("cannot be queued inside MULTI") != std::string::npos);
  CHECK(dedicated.sent.size() == 1);  // only MULTI reached Redis
  CHECK(client.send({"EXEC"}) == Action::done);
  CHECK(dedicated.sent.back().bytes == wire({"DISCARD"}));
}
}  // namespace

TEST_CASE("Corral's own commands that cannot run in EXEC are refused in MULTI, never forwarded",
          "[dispatcher]") {
  check_refused_in_multi({"AUTH", "guess"});
  check_refused_in_multi({"CLIENT", "REPLY", "ON"});
  check_refused_in_multi({"HELLO", "3"});
  check_refused_in_multi({"CLIENT", "UNBLOCK", "1"});
}

TEST_CASE("Corral's own commands inside MULTI are queued behind a PING and answered in EXEC",
          "[dispatcher]") {
  for (const bool watch_fails : {false, true}) {
    INFO("WATCH fails: " << watch_fails);
    Proxy proxy;
    Client client(proxy);
    CHECK(client.send({"MULTI"}) == Action::done);
    auto& dedicated = proxy.links.last_dedicated();
    dedicated.answer("+OK\r\n");
    CHECK(client.send({"CLIENT", "SETNAME", "queued"}) == Action::done);
    CHECK(client.send({"SET", "k", "v"}) == Action::done);
    CHECK(client.send({"CLIENT", "GETNAME"}) == Action::done);
    REQUIRE(dedicated.sent.size() == 4);
    CHECK(dedicated.sent[1].bytes == wire({"PING"}));
    CHECK(dedicated.sent[3].bytes == wire({"PING"}));
    for (int i = 0; i < 3; ++i) dedicated.answer("+QUEUED\r\n");
    CHECK(client.reply() == "+QUEUED\r\n");
    CHECK(client.send({"EXEC"}) == Action::done);
    CHECK(client.reply().empty());  // nothing runs before Redis has run the transaction
    if (watch_fails) {
      dedicated.answer("*-1\r\n");
      CHECK(client.reply() == "*-1\r\n");
      CHECK(client.send({"CLIENT", "GETNAME"}) == Action::done);
      CHECK(client.reply() == "$-1\r\n");
    } else {
      dedicated.answer("*3\r\n+PONG\r\n+OK\r\n+PONG\r\n");
      CHECK(client.reply() == "*3\r\n+OK\r\n+OK\r\n$6\r\nqueued\r\n");
    }
  }
}

TEST_CASE(
    "INFO and COMMAND inside MULTI reach Redis as themselves; EXEC's elements get Corral's "
    "part",
    "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  dedicated.answer("+OK\r\n");
  CHECK(client.send({"INFO", "server"}) == Action::done);
  CHECK(client.send({"COMMAND", "COUNT"}) == Action::done);
  CHECK(client.send({"INFO", "proxy"}) == Action::done);
  REQUIRE(dedicated.sent.size() == 4);
  CHECK(dedicated.sent[1].bytes == wire({"INFO", "server"}));
  CHECK(dedicated.sent[2].bytes == wire({"COMMAND", "COUNT"}));
  for (int i = 0; i < 3; ++i) dedicated.answer("+QUEUED\r\n");
  CHECK(client.send({"EXEC"}) == Action::done);
  dedicated.answer(
      "*3\r\n$36\r\n# Server\r\nprocess_id:1\r\ntcp_port:1\r\n\r\n:240\r\n-NOPERM no\r\n");
  const std::string exec = client.reply();
  INFO(exec);
  CHECK(exec.find("process_id:" + std::to_string(::getpid()) + "\r\n") != std::string::npos);
  CHECK(exec.find("process_id:1\r\n") == std::string::npos);
  CHECK(exec.find(":248\r\n") != std::string::npos);  // Redis's 240 and Corral's 8
  CHECK(exec.ends_with("-NOPERM no\r\n"));            // Redis's error is the answer
}

TEST_CASE("PING, ECHO and SELECT inside MULTI are queued with the rest", "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  CHECK(client.send({"PING"}) == Action::done);
  CHECK(client.send({"ECHO", "x"}) == Action::done);
  REQUIRE(dedicated.sent.size() == 3);
  CHECK(dedicated.sent.back().bytes == wire({"ECHO", "x"}));
}

TEST_CASE("SCRIPT DEBUG is refused; READONLY, READWRITE and ASKING are answered locally",
          "[dispatcher]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"SCRIPT", "DEBUG", "YES"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR command 'script|debug' is refused by this proxy"));
  for (auto name : {"READONLY", "READWRITE", "ASKING"}) {
    CHECK(client.send({name}) == Action::done);
    CHECK(client.reply() == "+OK\r\n");
  }
  CHECK(proxy.links.shared.empty());  // no shared connection was even asked for
}

}  // namespace corral::proxy::test
