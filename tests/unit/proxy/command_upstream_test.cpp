// COMMAND ... goes to the upstream, and Corral's own commands are added to its reply: entries,
// names, the count; errors pass unchanged; without an upstream the built-in table answers.
#include <catch2/catch.hpp>

#include "proxy/commands/command_info.hpp"
#include "recording_upstream.hpp"

using namespace corral;
using namespace corral::proxy;
using namespace corral::proxy::test;
using session::Action;

namespace {
std::string own_names() {
  std::string out;
  for (const CommandSpec* spec : own_commands()) resp::append_bulk(out, spec->name);
  return out;
}
}  // namespace

TEST_CASE("COMMAND COUNT and LIST add Corral's commands to the upstream's", "[command]") {
  Proxy proxy;
  Client client(proxy);
  auto& link = proxy.links.shared_link(0);
  const auto own = own_commands().size();
  REQUIRE(own >= 8);

  CHECK(client.send({"COMMAND", "COUNT"}) == Action::done);
  CHECK(link.bytes().back() == wire({"COMMAND", "COUNT"}));
  link.answer(":240\r\n");
  CHECK(client.reply() == ":" + std::to_string(240 + own) + "\r\n");

  CHECK(client.send({"COMMAND", "LIST"}) == Action::done);
  link.answer("*2\r\n$3\r\nacl\r\n$7\r\nacl|cat\r\n");
  CHECK(client.reply() ==
        "*" + std::to_string(2 + own) + "\r\n$3\r\nacl\r\n$7\r\nacl|cat\r\n" + own_names());

  // Only Corral's names the filter admits; the upstream's part is its own.
  CHECK(client.send({"COMMAND", "LIST", "FILTERBY", "PATTERN", "corral.in*"}) == Action::done);
  CHECK(link.bytes().back() == wire({"COMMAND", "LIST", "FILTERBY", "PATTERN", "corral.in*"}));
  link.answer("*0\r\n");
  CHECK(client.reply() == "*2\r\n$11\r\ncorral.info\r\n$17\r\ncorral.invalidate\r\n");
  CHECK(client.send({"COMMAND", "LIST", "FILTERBY", "ACLCAT", "admin"}) == Action::done);
  link.answer("*1\r\n$3\r\nacl\r\n");
  CHECK(client.reply() == "*1\r\n$3\r\nacl\r\n");

  CHECK(client.send({"COMMAND", "LIST", "FILTERBY", "ACLCAT"}) == Action::done);
  link.answer("-ERR syntax error\r\n");
  CHECK(client.reply() == "-ERR syntax error\r\n");
}

TEST_CASE("COMMAND INFO fills Corral's commands where the upstream says nil", "[command]") {
  Proxy proxy;
  Client client(proxy);
  auto& link = proxy.links.shared_link(0);
  CHECK(client.send({"COMMAND", "INFO", "get", "CORRAL.STATS", "nosuch"}) == Action::done);
  link.answer("*3\r\n*2\r\n$3\r\nget\r\n:2\r\n*-1\r\n*-1\r\n");
  const std::string reply = client.reply();
  CHECK(reply.starts_with("*3\r\n*2\r\n$3\r\nget\r\n:2\r\n*10\r\n$12\r\ncorral.stats\r\n:1\r\n"));
  CHECK(reply.ends_with("*-1\r\n"));
}

TEST_CASE("COMMAND GETKEYS goes upstream unchanged; CORRAL.* is answered here", "[command]") {
  Proxy proxy;
  Client client(proxy);
  auto& link = proxy.links.shared_link(0);
  CHECK(client.send({"COMMAND", "GETKEYSANDFLAGS", "set", "a", "b"}) == Action::done);
  link.answer("*1\r\n*2\r\n$1\r\na\r\n*2\r\n+OW\r\n+update\r\n");
  CHECK(client.reply() == "*1\r\n*2\r\n$1\r\na\r\n*2\r\n+OW\r\n+update\r\n");
  const auto sent = link.sent.size();
  CHECK(client.send({"COMMAND", "GETKEYS", "corral.info", "k"}) == Action::done);
  CHECK(link.sent.size() == sent);
  CHECK(client.reply() == "-ERR The command has no key arguments\r\n");
}

TEST_CASE("without COMMAND upstream, the built-in table answers", "[command]") {
  Proxy proxy;
  Client client(proxy);
  auto& link = proxy.links.shared_link(0);
  CHECK(client.send({"COMMAND", "LIST", "FILTERBY", "PATTERN", "acl|c*"}) == Action::done);
  link.answer("-ERR unknown command 'COMMAND', with args beginning with: 'LIST' \r\n");
  CHECK(client.reply() == "*1\r\n$7\r\nacl|cat\r\n");

  link.refuse = true;
  CHECK(client.send({"COMMAND", "LIST", "FILTERBY", "MODULE"}) == Action::done);
  CHECK(client.reply() == "-ERR syntax error\r\n");
  CHECK(client.send({"COMMAND", "DOCS", "corral.info"}) == Action::done);
  CHECK(client.reply().starts_with("*2\r\n$11\r\ncorral.info\r\n*6\r\n$7\r\nsummary\r\n"));
}
