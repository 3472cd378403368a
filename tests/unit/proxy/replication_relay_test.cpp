// A replica through the dispatcher (Route::replication): refused unless allowed, REPLCONF and
// then PSYNC on one link of the client's own that becomes a raw relay once Redis accepts, the
// client's later bytes sent up as they are, Redis's refusal (an ordinary client again), and
// Corral's (inside MULTI, on a cluster).
#include <catch2/catch.hpp>

#include "recording_cluster.hpp"
#include "recording_upstream.hpp"

namespace corral::proxy::test {

using session::Action;

namespace {
config::Settings allowing_replication() {
  config::Settings settings;
  settings.client.allow_commands = {"SYNC", "PSYNC", "REPLCONF"};
  return settings;
}
}  // namespace

TEST_CASE("SYNC, PSYNC and REPLCONF are refused unless allowed", "[replication]") {
  Proxy proxy;
  Client client(proxy);
  for (const auto name : {"SYNC", "PSYNC", "REPLCONF"}) {
    const std::vector<std::string_view> argv = std::string_view(name) == "SYNC"
                                                   ? std::vector<std::string_view>{name}
                                                   : std::vector<std::string_view>{name, "a", "b"};
    const resp::Request request{argv, {}};
    CHECK(client.handler->handle(request, client.handler->classify(request), ++client.tag,
                                 client.slots, 0) == Action::done);
    CHECK(client.reply().find("is not allowed through this proxy") != std::string::npos);
  }
  CHECK(proxy.links.dedicated.empty());
  CHECK(proxy.links.shared.empty());
}

TEST_CASE("REPLCONF and PSYNC share the client's own link, which then relays raw bytes",
          "[replication]") {
  Proxy proxy(allowing_replication());
  Client replica(proxy);
  CHECK(replica.send({"REPLCONF", "listening-port", "6390"}) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 1);
  auto& link = proxy.links.last_dedicated();
  link.answer("+OK\r\n");
  CHECK(replica.reply() == "+OK\r\n");
  CHECK(replica.send({"REPLCONF", "capa", "eof", "capa", "psync2"}) == Action::done);
  link.answer("+OK\r\n");

  // Its earlier replies must be out before the stream starts: the session drains, then retries.
  CHECK(replica.send({"PSYNC", "?", "-1"}, 1) == Action::drain_then_retry);
  CHECK(replica.retry({"PSYNC", "?", "-1"}) == Action::relay);
  CHECK(proxy.links.dedicated.size() == 1);
  CHECK(link.raw_relay);
  CHECK(link.unsolicited != nullptr);
  CHECK(link.bytes() ==
        std::vector<std::string>{wire({"REPLCONF", "listening-port", "6390"}),
                                 wire({"REPLCONF", "capa", "eof", "capa", "psync2"}),
                                 wire({"PSYNC", "?", "-1"})});
  CHECK_FALSE(link.sent.back().tracked);

  CHECK(replica.handler->relay_input("REPLCONF ACK 0\r\npartial"));
  CHECK(link.sent.back().bytes == "REPLCONF ACK 0\r\npartial");
  CHECK_FALSE(link.sent.back().tracked);
  // Nobody else's command ever went there, and the shared links saw nothing of it.
  CHECK(proxy.links.shared.empty());

  // The link is the client's to the end: released, not recycled.
  replica.handler->end_session();
  CHECK(link.closes == 1);
}

TEST_CASE("the relay holds once Redis accepted: the verdict is due until then", "[replication]") {
  Proxy proxy(allowing_replication());
  Client replica(proxy);
  CHECK(replica.send({"PSYNC", "?", "-1"}) == Action::relay);
  auto& link = proxy.links.last_dedicated();
  CHECK(replica.handler->relay_verdict() == session::RelayVerdict::due);
  link.relay = upstream::Link::RelayState::relaying;
  CHECK(replica.handler->relay_verdict() == session::RelayVerdict::accepted);
  CHECK(replica.handler->relay_input("REPLCONF ACK 0\r\n"));
  CHECK(link.sent.back().bytes == "REPLCONF ACK 0\r\n");
}

TEST_CASE("a PSYNC Redis refused leaves an ordinary client, whose link goes at its next command",
          "[replication]") {
  Proxy proxy(allowing_replication());
  Client replica(proxy);
  CHECK(replica.send({"PSYNC", "?", "-1"}) == Action::relay);
  auto& link = proxy.links.last_dedicated();
  link.relay = upstream::Link::RelayState::off;  // -NOPERM came back
  CHECK(replica.handler->relay_verdict() == session::RelayVerdict::refused);
  CHECK_FALSE(replica.handler->relay_input("GET k\r\n"));
  CHECK(link.bytes() == std::vector<std::string>{wire({"PSYNC", "?", "-1"})});

  // Corral's command table again: refused here, never sent up.
  CHECK(replica.send({"FLUSHALL"}) == Action::done);
  CHECK(replica.reply().find("is not allowed through this proxy") != std::string::npos);
  CHECK(replica.send({"GET", "k"}) == Action::done);
  CHECK(proxy.links.shared_of(0).bytes() == std::vector<std::string>{wire({"GET", "k"})});
  CHECK(link.closes == 1);
  CHECK(link.bytes().size() == 1);
}

TEST_CASE("under CLIENT REPLY OFF or SKIP, Redis's refusal of a PSYNC is withheld",
          "[replication]") {
  Proxy proxy(allowing_replication());
  Client replica(proxy);
  for (const auto mode : {"OFF", "SKIP"}) {
    CHECK(replica.send({"CLIENT", "REPLY", mode}) == Action::done);
    CHECK(replica.send({"PSYNC", "?", "-1"}) == Action::relay);
    proxy.links.last_dedicated().relay = upstream::Link::RelayState::off;
    CHECK(replica.handler->relay_verdict() == session::RelayVerdict::refused_unanswered);
    CHECK(replica.send({"CLIENT", "REPLY", "ON"}) == Action::done);
  }
  CHECK(replica.send({"PSYNC", "?", "-1"}) == Action::relay);
  proxy.links.last_dedicated().relay = upstream::Link::RelayState::off;
  CHECK(replica.handler->relay_verdict() == session::RelayVerdict::refused);
}

TEST_CASE("after REPLCONF, a refused PSYNC keeps the link: a retry goes there", "[replication]") {
  Proxy proxy(allowing_replication());
  Client replica(proxy);
  CHECK(replica.send({"REPLCONF", "capa", "eof"}) == Action::done);
  auto& link = proxy.links.last_dedicated();
  link.answer("+OK\r\n");
  CHECK(replica.send({"PSYNC", "?", "-1"}) == Action::relay);
  link.relay = upstream::Link::RelayState::off;
  CHECK(replica.handler->relay_verdict() == session::RelayVerdict::refused);
  CHECK(replica.send({"PSYNC", "?", "-1"}) == Action::relay);
  CHECK(proxy.links.dedicated.size() == 1);
  CHECK(link.closes == 0);
  CHECK(link.bytes() == std::vector<std::string>{wire({"REPLCONF", "capa", "eof"}),
                                                 wire({"PSYNC", "?", "-1"}),
                                                 wire({"PSYNC", "?", "-1"})});
}

TEST_CASE("a raw SYNC opens its own link; a dead link ends the relay", "[replication]") {
  Proxy proxy(allowing_replication());
  Client other(proxy);
  CHECK(other.send({"GET", "k"}) == Action::done);
  Client replica(proxy);
  CHECK(replica.send({"SYNC"}) == Action::relay);
  REQUIRE(proxy.links.dedicated.size() == 1);
  auto& link = proxy.links.last_dedicated();
  CHECK(link.raw_relay);
  CHECK(link.bytes() == std::vector<std::string>{wire({"SYNC"})});
  CHECK(proxy.links.shared_of(0).bytes() == std::vector<std::string>{wire({"GET", "k"})});
  link.die();
  CHECK_FALSE(replica.handler->relay_input("\n"));
}

TEST_CASE("PSYNC after the REPLCONF link died fails; the next handshake opens a new one",
          "[replication]") {
  Proxy proxy(allowing_replication());
  Client replica(proxy);
  CHECK(replica.send({"REPLCONF", "capa", "eof"}) == Action::done);
  auto& first = proxy.links.last_dedicated();
  first.answer("+OK\r\n");
  first.die();
  CHECK(replica.send({"PSYNC", "?", "-1"}) == Action::done);
  CHECK(replica.failure() == "ERR upstream connection lost");
  CHECK_FALSE(first.raw_relay);
  CHECK(replica.send({"REPLCONF", "capa", "eof"}) == Action::done);
  REQUIRE(proxy.links.dedicated.size() == 2);
  CHECK(proxy.links.last_dedicated().bytes() ==
        std::vector<std::string>{wire({"REPLCONF", "capa", "eof"})});
}

TEST_CASE("SYNC inside MULTI is Redis's error and aborts the transaction", "[replication]") {
  Proxy proxy(allowing_replication());
  Client client(proxy);
  CHECK(client.send({"MULTI"}) == Action::done);
  auto& link = proxy.links.last_dedicated();
  link.answer("+OK\r\n");
  CHECK(client.send({"SYNC"}) == Action::done);
  CHECK(client.reply() == "-ERR Command not allowed inside a transaction\r\n");
  CHECK_FALSE(link.raw_relay);
  CHECK(client.send({"EXEC"}) == Action::done);
  CHECK(link.sent.back().bytes == wire({"DISCARD"}));
}

TEST_CASE("a cluster upstream refuses SYNC: its links follow keys over several nodes",
          "[replication]") {
  auto settings = ClusterProxy::cluster_settings();
  settings.client.allow_commands = {"SYNC", "PSYNC", "REPLCONF"};
  ClusterProxy c(settings);
  Client replica(c.proxy);
  CHECK(replica.send({"SYNC"}) == Action::done);
  CHECK(
      replica.reply().starts_with("-ERR this proxy relays a replication stream from one server "
                                  "only"));
  CHECK(replica.send({"PING"}) == Action::done);
  CHECK(replica.reply() == "+PONG\r\n");
}

TEST_CASE("a SYNC before the cluster's first slot map waits for the map, then gets the refusal",
          "[replication]") {
  auto settings = ClusterProxy::cluster_settings();
  settings.client.allow_commands = {"SYNC", "PSYNC", "REPLCONF"};
  ClusterProxy c(settings);
  const upstream::SlotMap map = c.links.map;
  c.links.map = upstream::SlotMap{};  // Corral has just started: no map yet
  Client replica(c.proxy);
  CHECK(replica.send({"SYNC"}) == Action::wait_then_retry);
  CHECK(replica.failure().empty());
  CHECK_FALSE(c.links.refreshes.empty());  // and the map is asked for

  c.links.map = map;
  CHECK(replica.retry({"SYNC"}) == Action::done);
  CHECK(
      replica.reply().starts_with("-ERR this proxy relays a replication stream from one server "
                                  "only"));
}

}  // namespace corral::proxy::test
