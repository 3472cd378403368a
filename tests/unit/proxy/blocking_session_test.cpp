// Blocking commands on a client's session link: the link is kept between them while clean, and a
// client that leaves while blocked takes its blocked command with it, whatever state it held.
#include <catch2/catch.hpp>

#include "recording_upstream.hpp"

namespace corral::proxy::test {

using session::Action;

TEST_CASE("the session link of a blocking command is kept for the next one", "[blocking]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"BLPOP", "l", "0"}) == Action::done);
  auto& link = proxy.links.last_dedicated();
  link.answer("*-1\r\n");
  CHECK(client.send({"SET", "k", "v"}) == Action::done);  // on a shared connection
  CHECK(proxy.links.shared_of(0).sent.size() == 1);
  CHECK(link.closes == 0);
  CHECK(client.send({"BLPOP", "l", "0"}) == Action::done);
  CHECK(proxy.links.dedicated.size() == 1);
  CHECK(link.sent.back().bytes == wire({"BLPOP", "l", "0"}));
}

TEST_CASE("a kept link is not used once it died or the client changed protocol", "[blocking]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"BLPOP", "l", "0"}) == Action::done);
  auto& first = proxy.links.last_dedicated();
  first.answer("*-1\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);
  first.die();
  CHECK(client.send({"BLPOP", "l", "0"}) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 2);
  auto& second = proxy.links.last_dedicated();
  second.answer("*-1\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(client.send({"HELLO", "3"}) == Action::done);
  CHECK(client.send({"BLPOP", "l", "0"}) == Action::done);
  CHECK(second.closes == 1);  // a RESP2 link serves no RESP3 client
  CHECK(proxy.links.dedicated.size() == 3);
}

TEST_CASE("a link that carried no blocking command is closed when left", "[blocking]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  auto& link = proxy.links.last_dedicated();
  CHECK(client.send({"EXEC"}) == Action::done);
  link.answer("+OK\r\n");
  link.answer("*0\r\n");
  CHECK(client.send({"GET", "k"}) == Action::done);
  CHECK(link.closes == 1);
}

TEST_CASE("a client that leaves while blocked under WATCH closes its link", "[blocking]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"WATCH", "w"}) == Action::done);
  auto& link = proxy.links.last_dedicated();
  link.answer("+OK\r\n");
  CHECK(client.send({"BLPOP", "l", "0"}) == Action::done);
  client.handler->drain();
  CHECK(link.closes == 1);
}

TEST_CASE("a client that leaves under WATCH while not blocked keeps its link until it ends",
          "[blocking]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"WATCH", "w"}) == Action::done);
  auto& link = proxy.links.last_dedicated();
  link.answer("+OK\r\n");
  CHECK(client.send({"BLPOP", "l", "0"}) == Action::done);
  link.answer("*-1\r\n");  // the block ended: nothing of the client's is blocked in Redis
  client.handler->drain();
  CHECK(link.closes == 0);
}

}  // namespace corral::proxy::test
