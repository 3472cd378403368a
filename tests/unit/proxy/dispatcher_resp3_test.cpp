// RESP3 clients through the dispatcher: HELLO switches the protocol (and the connections used),
// (un)subscribe confirmed by pushes gets no tracked reply, pushes reach the client while it runs
// commands, and cached replies convert from the one RESP2 copy.
#include <catch2/catch.hpp>

#include <cctype>

#include "proxy/resp3.hpp"
#include "recording_upstream.hpp"

namespace corral::proxy::test {

using session::Action;

TEST_CASE("HELLO answers a map in RESP3 and a flat array in RESP2", "[dispatcher][resp3]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.reply().starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"));
  CHECK(client.reply().find("$5\r\nproto\r\n:3\r\n") != std::string::npos);
  CHECK(client.send({"HELLO"}) == Action::done);
  CHECK(client.reply().starts_with("%7\r\n"));
  CHECK(client.send({"HELLO", "2", "SETNAME", "two"}) == Action::done);
  CHECK(client.reply().starts_with("*14\r\n"));
  CHECK(client.reply().find("$5\r\nproto\r\n:2\r\n") != std::string::npos);
  CHECK(client.send({"HELLO", "4"}) == Action::done);
  CHECK(client.reply() == "-NOPROTO unsupported protocol version\r\n");
  CHECK(client.send({"HELLO", "x"}) == Action::done);
  CHECK(client.reply().starts_with("-ERR Protocol version is not an integer"));
}

TEST_CASE("HELLO 3 AUTH authenticates and switches at once", "[dispatcher][resp3]") {
  config::Settings settings;
  settings.client.password = "secret";
  Proxy proxy(settings);
  Client client(proxy);
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.reply().starts_with("-NOAUTH HELLO must be called"));
  CHECK(client.send({"HELLO", "3", "AUTH", "default", "wrong"}) == Action::done);
  CHECK(client.reply().starts_with("-WRONGPASS"));
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(client.reply().starts_with("-NOAUTH"));
  CHECK(client.send({"HELLO", "3", "AUTH", "default", "secret", "SETNAME", "n"}) == Action::done);
  CHECK(client.reply().starts_with("%7\r\n"));
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(proxy.links.protocols == std::vector<int>{3});
}

TEST_CASE("RESET goes back to RESP2", "[dispatcher][resp3]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.send({"RESET"}) == Action::done);
  CHECK(client.send({"HELLO"}) == Action::done);
  CHECK(client.reply().starts_with("*14\r\n"));
}

TEST_CASE("a RESP3 client's commands travel RESP3 connections", "[dispatcher][resp3]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(proxy.links.protocols == std::vector<int>{2, 3});
  CHECK(client.send({"BLPOP", "l", "0"}) == Action::done);
  CHECK(proxy.links.dedicated_protocols == std::vector<int>{3});
}

TEST_CASE("RESP3 SUBSCRIBE: pushes confirm it, commands keep their slots", "[dispatcher][resp3]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.send({"SUBSCRIBE", "a", "b"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  REQUIRE(dedicated.sent.size() == 1);
  CHECK_FALSE(dedicated.sent[0].tracked);  // its confirmations are pushes, not a reply
  // Its slot waits for the first confirmation push, so no later reply can overtake it.
  const auto subscribe_tag = client.tag;
  CHECK(client.slots->replies.count(subscribe_tag) == 0);
  client.handler->on_unsolicited(">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nx\r\n");
  CHECK(client.slots->replies.count(subscribe_tag) == 0);  // a message confirms nothing
  client.handler->on_unsolicited(">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n");
  REQUIRE(client.slots->replies.count(subscribe_tag) == 1);
  CHECK(client.slots->replies[subscribe_tag].empty());
  CHECK(dedicated.unsolicited == client.slots);
  CHECK_FALSE(client.handler->tunneling());

  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(dedicated.sent.back().tracked);
  dedicated.answer("$1\r\nv\r\n");
  CHECK(client.reply() == "$1\r\nv\r\n");
  // Unsubscribing from everything keeps the connection: pushes may still be on their way.
  CHECK(client.send({"UNSUBSCRIBE"}) == Action::done);
  CHECK_FALSE(dedicated.sent.back().tracked);
  const auto unsubscribe_tag = client.tag;
  client.handler->on_unsolicited(">3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n");
  CHECK(client.slots->replies.count(unsubscribe_tag) == 1);
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(dedicated.closes == 0);
}

TEST_CASE("RESP3 SUBSCRIBE inside MULTI is queued like any command", "[dispatcher][resp3]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.send({"MULTI"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  dedicated.answer("+OK\r\n");
  CHECK(client.send({"SUBSCRIBE", "a"}) == Action::done);
  CHECK(dedicated.sent.back().tracked);  // Redis answers +QUEUED
  dedicated.answer("+QUEUED\r\n");
  CHECK(client.reply() == "+QUEUED\r\n");
}

TEST_CASE("RESP3 tracking sets the client as the push target", "[dispatcher][resp3]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.send({"CLIENT", "TRACKING", "on"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  CHECK(dedicated.unsolicited == client.slots);
  // The protocol changes on the connection that holds the tracking state, as in Redis, once the
  // client's earlier replies are in.
  CHECK(client.send({"HELLO", "2"}, 1) == Action::drain_then_retry);
  dedicated.answer("+OK\r\n");
  CHECK(client.retry({"HELLO", "2"}) == Action::done);
  CHECK(client.reply().starts_with("*14\r\n"));
  CHECK(dedicated.sent.back().bytes == "*2\r\n$5\r\nHELLO\r\n$1\r\n2\r\n");
  CHECK(&proxy.links.last_dedicated() == &dedicated);
}

TEST_CASE("a RESP2 tracking client switches to RESP3 and takes its pushes", "[dispatcher][resp3]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"CLIENT", "TRACKING", "on"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  dedicated.answer("+OK\r\n");
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.reply().starts_with("%7\r\n"));
  CHECK(dedicated.sent.back().bytes == "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n");
  CHECK(dedicated.unsolicited == client.slots);
}

TEST_CASE("a RESP3 subscriber switches to RESP2 and its messages are tunnelled",
          "[dispatcher][resp3]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.send({"SUBSCRIBE", "a"}) == Action::done);
  auto& dedicated = proxy.links.last_dedicated();
  CHECK(client.send({"HELLO", "2"}) == Action::done);
  CHECK(client.reply().starts_with("*14\r\n"));
  CHECK(dedicated.sent.back().bytes == "*2\r\n$5\r\nHELLO\r\n$1\r\n2\r\n");
  CHECK(client.handler->tunneling());
}

TEST_CASE("RESP2 SUBSCRIBE still tunnels", "[dispatcher][resp3]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"SUBSCRIBE", "a"}) == Action::done);
  CHECK(client.handler->tunneling());
}

TEST_CASE("cached RESP2 replies convert to what Redis answers a RESP3 client", "[resp3]") {
  auto convert = [](std::initializer_list<std::string_view> words, std::string_view reply) {
    const std::vector<std::string_view> argv(words);
    std::string command(argv[0]);
    for (auto& c : command) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string out;
    append_as_resp3(out, command, argv, reply);
    return out;
  };
  CHECK(convert({"GET", "k"}, "$-1\r\n") == "_\r\n");
  CHECK(convert({"GET", "k"}, "$1\r\nv\r\n") == "$1\r\nv\r\n");
  CHECK(convert({"HGETALL", "h"}, "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n") ==
        "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n");
  CHECK(convert({"HGETALL", "h"}, "*0\r\n") == "%0\r\n");
  CHECK(convert({"SMEMBERS", "s"}, "*1\r\n$1\r\nx\r\n") == "~1\r\n$1\r\nx\r\n");
  CHECK(convert({"MGET", "a", "b"}, "*2\r\n$1\r\nv\r\n$-1\r\n") == "*2\r\n$1\r\nv\r\n_\r\n");
  CHECK(convert({"HMGET", "h", "f"}, "*1\r\n$-1\r\n") == "*1\r\n_\r\n");
  CHECK(convert({"ZRANGE", "z", "0", "-1", "withscores"},
                "*4\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n") ==
        "*2\r\n*2\r\n$1\r\na\r\n,1.5\r\n*2\r\n$1\r\nb\r\n,2\r\n");
  CHECK(convert({"ZRANGE", "z", "0", "-1"}, "*1\r\n$1\r\na\r\n") == "*1\r\n$1\r\na\r\n");
  // A key named "withscores" is not the option.
  CHECK(convert({"ZRANGE", "withscores", "0", "-1"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n") ==
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  CHECK(convert({"EXISTS", "k"}, ":1\r\n") == ":1\r\n");
  CHECK(convert({"GET", "k"}, "-WRONGTYPE x\r\n") == "-WRONGTYPE x\r\n");
}

}  // namespace corral::proxy::test
