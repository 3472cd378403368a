// INFO merged with the upstream's, out-of-band control commands, and subscribed mode across
// pipelined unsubscribe/resubscribe: the dispatcher against a recording upstream.
#include <catch2/catch.hpp>

#include "proxy/links/tunnel_barrier.hpp"
#include "proxy/local/server_info.hpp"
#include "recording_upstream.hpp"
#include "upstream/errors.hpp"

using namespace corral;
using namespace corral::proxy;
using namespace corral::proxy::test;
using session::Action;

namespace {
std::string bulk(std::string_view text) {
  std::string out;
  resp::append_bulk(out, text);
  return out;
}
std::string push3(std::string_view kind, std::string_view channel, int count) {
  return "*3\r\n$" + std::to_string(kind.size()) + "\r\n" + std::string(kind) + "\r\n$" +
         std::to_string(channel.size()) + "\r\n" + std::string(channel) +
         "\r\n:" + std::to_string(count) + "\r\n";
}
}  // namespace

TEST_CASE("merge_info_text replaces the proxy's fields and keeps the rest", "[info]") {
  const std::string upstream =
      "# Server\r\nredis_version:7.0.15\r\nprocess_id:42\r\ntcp_port:6379\r\n\r\n"
      "# Clients\r\nconnected_clients:7\r\nblocked_clients:0\r\n";
  const std::string merged =
      merge_info_text(upstream, "process_id:9\r\ntcp_port:6380\r\nconnected_clients:1\r\n");
  CHECK(merged ==
        "# Server\r\nredis_version:7.0.15\r\nprocess_id:9\r\ntcp_port:6380\r\n\r\n"
        "# Clients\r\nconnected_clients:1\r\nblocked_clients:0\r\n");
  // A field whose name ends another's is not replaced by it.
  CHECK(merge_info_text("total_connected_clients:5\r\n", "connected_clients:1\r\n") ==
        "total_connected_clients:5\r\n");
  CHECK(merge_info_text("", "process_id:9\r\n").empty());
}

TEST_CASE("INFO goes upstream and comes back with Corral's fields and sections", "[info]") {
  config::Settings settings;
  settings.listen.port = 7777;
  Proxy proxy(settings);
  Client client(proxy);
  CHECK(client.send({"INFO"}) == Action::done);
  CHECK(client.reply().empty());
  auto& shared = proxy.links.shared_of(0);
  REQUIRE(shared.bytes() == std::vector<std::string>{wire({"INFO"})});

  SECTION("merged") {
    shared.answer(bulk("# Server\r\nredis_version:7.4.1\r\ntcp_port:6379\r\n"));
    const std::string reply = client.reply();
    CHECK(reply.find("redis_version:7.4.1\r\n") != std::string::npos);
    CHECK(reply.find("tcp_port:7777\r\n") != std::string::npos);
    CHECK(reply.find("tcp_port:6379") == std::string::npos);
    CHECK(reply.find("# Proxy\r\n") != std::string::npos);
    CHECK(reply.find("# Cache\r\n") != std::string::npos);
  }
  SECTION("the upstream fails: Corral's sections alone, no made-up version") {
    const Sent sent = shared.pending.front();
    sent.target->on_failure(sent.tag, upstream::kErrConnectionLost);
    const std::string reply = client.reply();
    CHECK(reply.starts_with("$"));
    CHECK(reply.find("# Server\r\n") != std::string::npos);
    CHECK(reply.find("tcp_port:7777\r\n") != std::string::npos);
    CHECK(reply.find("# Proxy\r\n") != std::string::npos);
    CHECK(reply.find("redis_version") == std::string::npos);
  }
  SECTION("the upstream answers garbage") {
    shared.answer("-ERR nope\r\n");
    CHECK(client.reply().find("# Proxy\r\n") != std::string::npos);
  }
}

TEST_CASE("INFO with sections asks the upstream for them and adds only the wanted own ones",
          "[info]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"INFO", "memory"}) == Action::done);
  proxy.links.shared_of(0).answer(bulk("# Memory\r\nused_memory:1\r\n"));
  CHECK(client.reply() == bulk("# Memory\r\nused_memory:1\r\n"));
  CHECK(client.send({"INFO", "proxy"}) == Action::done);
  proxy.links.shared_of(0).answer(bulk(""));
  CHECK(client.reply().find("# Proxy\r\n") != std::string::npos);
}

TEST_CASE("SCRIPT KILL and SHUTDOWN go on a connection of their own at once", "[out_of_band]") {
  config::Settings settings;
  settings.client.allow_commands = {"SCRIPT KILL", "SHUTDOWN"};
  Proxy proxy(settings);
  Client busy(proxy);
  Client admin(proxy);
  CHECK(busy.send({"EVAL", "while true do end", "0"}) == Action::done);
  CHECK(admin.send({"SCRIPT", "KILL"}) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 1);
  auto& link = proxy.links.last_dedicated();
  CHECK(link.bytes() == std::vector<std::string>{wire({"SCRIPT", "KILL"})});
  CHECK(proxy.links.shared_of(0).bytes().size() == 1);
  link.answer("+OK\r\n");
  CHECK(admin.reply() == "+OK\r\n");
  CHECK(link.closes == 1);
  // The client holds no connection afterwards: its next command is shared again.
  CHECK(admin.send({"GET", "k"}) == Action::done);
  CHECK(proxy.links.shared_of(0).bytes().size() == 2);

  CHECK(admin.send({"SHUTDOWN", "NOSAVE"}) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 2);
  auto& second = proxy.links.last_dedicated();
  const Sent sent = second.pending.front();
  sent.target->on_failure(sent.tag, upstream::kErrConnectionLost);
  CHECK(admin.failure() == upstream::kErrConnectionLost);
  CHECK(second.closes == 1);
}

TEST_CASE("an out-of-band command inside MULTI is queued on the client's connection",
          "[out_of_band]") {
  config::Settings settings;
  settings.client.allow_commands = {"SCRIPT|KILL"};
  Proxy proxy(settings);
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  CHECK(client.send({"SCRIPT", "KILL"}, 1) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 1);
  CHECK(proxy.links.last_dedicated().bytes() ==
        std::vector<std::string>{wire({"MULTI"}), wire({"SCRIPT", "KILL"})});
}

TEST_CASE("a subscribed client's requests behind an UNSUBSCRIBE wait for the barrier", "[pubsub]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"SUBSCRIBE", "a"}) == Action::done);
  auto& link = proxy.links.last_dedicated();
  // Redis may refuse a SUBSCRIBE: the barrier behind it says whether the tunnel holds.
  CHECK(link.sent.back().bytes == barrier_request());
  CHECK(client.handler->settling());
  link.answer(push3("subscribe", "a", 1));
  CHECK(client.handler->takes_unsolicited(barrier_reply(true)));
  CHECK_FALSE(client.handler->settling());
  REQUIRE(client.handler->tunneling());

  std::string reply;
  CHECK(client.tunnel({"UNSUBSCRIBE"}, reply) == Action::done);
  CHECK(link.sent.back().bytes == barrier_request());
  CHECK(client.handler->settling());  // the session holds the pipelined requests
  client.handler->on_unsolicited(push3("unsubscribe", "a", 0));
  CHECK(client.handler->tunneling());
  CHECK(client.handler->takes_unsolicited(barrier_reply(false)));
  CHECK_FALSE(client.handler->tunneling());

  SECTION("a SUBSCRIBE behind it then subscribes again from plain mode") {
    CHECK(client.send({"SUBSCRIBE", "b", "c"}) == Action::done);
    CHECK(proxy.links.dedicated.size() == 1);
    CHECK(client.handler->tunneling());
    link.answer(push3("subscribe", "b", 1));
    client.handler->on_unsolicited(push3("subscribe", "c", 2));
    CHECK(client.handler->takes_unsolicited(barrier_reply(true)));
    CHECK(client.tunnel({"UNSUBSCRIBE", "b"}, reply) == Action::done);
    client.handler->on_unsolicited(push3("unsubscribe", "b", 1));
    CHECK(client.handler->takes_unsolicited(barrier_reply(true)));
    CHECK(client.handler->tunneling());
  }
  SECTION("any other command behind it goes through the usual checks") {
    CHECK(client.send({"SCRIPT", "DEBUG", "SYNC"}) == Action::done);
    CHECK(client.reply().find("is refused by this proxy") != std::string::npos);
  }
}

TEST_CASE("while subscribed Corral answers what Redis would refuse, after a barrier", "[pubsub]") {
  Proxy proxy;
  Client client(proxy);
  CHECK(client.send({"SUBSCRIBE", "a"}) == Action::done);
  auto& link = proxy.links.last_dedicated();
  link.answer(push3("subscribe", "a", 1));
  CHECK(client.handler->takes_unsolicited(barrier_reply(true)));
  std::string reply;
  CHECK(client.tunnel({"PING"}, reply) == Action::done);  // allowed: forwarded
  CHECK(link.sent.back().bytes == wire({"PING"}));
  const auto sent = link.sent.size();
  // The PING's reply may still be due: a barrier goes first, then Corral answers.
  CHECK(client.tunnel({"CLIENT", "REPLY", "OFF"}, reply) == Action::drain_then_retry);
  CHECK(link.sent.size() == sent + 1);
  CHECK(link.sent.back().bytes == barrier_request());
  CHECK(client.handler->takes_unsolicited(barrier_reply(true)));
  CHECK(client.tunnel({"CLIENT", "REPLY", "OFF"}, reply) == Action::done);
  CHECK(reply.starts_with("-ERR Can't execute 'client|reply': only (P|S)SUBSCRIBE"));
  reply.clear();
  CHECK(client.tunnel({"GET"}, reply) == Action::done);
  CHECK(reply == "-ERR wrong number of arguments for 'get' command\r\n");
  CHECK(link.sent.size() == sent + 1);  // neither reached Redis

  SECTION("RESET is Corral's, once Redis answered what came before") {
    CHECK(client.tunnel({"RESET"}, reply) == Action::drain_then_retry);
    CHECK(link.sent.back().bytes == barrier_request());
    CHECK_FALSE(client.handler->tunneling());
    CHECK(client.handler->settling());
    CHECK(client.handler->takes_unsolicited(barrier_reply(true)));
    CHECK(client.send({"RESET"}) == Action::done);
    CHECK(client.reply() == "+RESET\r\n");
    CHECK(link.closes == 1);
  }
}

TEST_CASE("the CORRAL admin commands answer an error, not a crash, without a cache runtime") {
  Proxy proxy;  // its dispatcher is built without one
  Client client(proxy);
  for (const auto& words : {std::initializer_list<std::string_view>{"CORRAL.STATS"},
                            std::initializer_list<std::string_view>{"CORRAL.INFO", "k"},
                            std::initializer_list<std::string_view>{"CORRAL.INVALIDATE", "k"}}) {
    CHECK(client.send(words) == Action::done);
    CHECK(client.reply() == "-ERR corral: this process has no cache runtime\r\n");
  }
  CHECK(proxy.links.shared.empty());
}
