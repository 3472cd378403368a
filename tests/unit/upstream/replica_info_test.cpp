// Tests the replica poller's reading of SENTINEL REPLICAS and INFO replication, and which
// primary offset a client's write waits for (ReplicaSnapshot::primary_offset_since).
#include <catch2/catch.hpp>

#include <string>

#include "upstream/replica_view.hpp"
#include "upstream/replication_info.hpp"
#include "upstream/sentinel/replica_info.hpp"

using namespace corral::upstream;

namespace {
std::string replica_entry(const std::string& ip, const std::string& port,
                          const std::string& flags) {
  return "*6\r\n$2\r\nip\r\n$" + std::to_string(ip.size()) + "\r\n" + ip + "\r\n$4\r\nport\r\n$" +
         std::to_string(port.size()) + "\r\n" + port + "\r\n$5\r\nflags\r\n$" +
         std::to_string(flags.size()) + "\r\n" + flags + "\r\n";
}
std::string bulk(const std::string& text) {
  return "$" + std::to_string(text.size()) + "\r\n" + text + "\r\n";
}
}  // namespace

TEST_CASE("SENTINEL REPLICAS: replicas flagged down or disconnected are left out",
          "[upstream][sentinel]") {
  const std::string reply = "*4\r\n" + replica_entry("127.0.0.1", "6381", "slave") +
                            replica_entry("127.0.0.1", "6382", "s_down,slave") +
                            replica_entry("127.0.0.1", "6383", "slave,disconnected") +
                            replica_entry("10.0.0.2", "6384", "slave");
  const auto up = parse_sentinel_replicas(reply);
  REQUIRE(up.size() == 2);
  CHECK(up[0].host == "127.0.0.1");
  CHECK(up[0].port == 6381);
  CHECK(up[1].host == "10.0.0.2");
  CHECK(up[1].port == 6384);

  CHECK(parse_sentinel_replicas("*1\r\n" + replica_entry("h", "70000", "slave")).empty());
  CHECK(parse_sentinel_replicas("*1\r\n" + replica_entry("h", "x1", "slave")).empty());
  CHECK(parse_sentinel_replicas("-ERR No such master with that name\r\n").empty());
}

TEST_CASE("INFO replication: offsets and the replica's link", "[upstream][sentinel]") {
  const std::string replica = bulk(
      "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\nslave_repl_offset:12345\r\n"
      "master_repl_offset:12345\r\n");
  CHECK(info_number(replica, "slave_repl_offset") == 12345u);
  CHECK(info_number(replica, "master_repl_offset") == 12345u);
  CHECK(info_link_up(replica));
  // A prefix of another field's name is not that field.
  CHECK_FALSE(info_number(bulk("slave_repl_offset_x:1\r\n"), "slave_repl_offset"));
  CHECK_FALSE(info_number(bulk("slave_repl_offset:12a\r\n"), "slave_repl_offset"));
  CHECK_FALSE(info_link_up(bulk("role:slave\r\nmaster_link_status:down\r\n")));
  CHECK_FALSE(info_number("-ERR\r\n", "master_repl_offset"));
}

TEST_CASE("a write waits for the first primary poll that started after its answer",
          "[upstream][sentinel]") {
  ReplicaView view;
  const auto before = view.begin_primary_poll();  // started before the write was answered
  const auto wanted = view.next_primary_poll();   // the write's answer arrives now
  CHECK(wanted == before + 1);
  view.finish_primary_poll(before, 100);
  CHECK_FALSE(view.snapshot().primary_offset_since(wanted));  // that poll may predate the write
  const auto after = view.begin_primary_poll();
  CHECK(after == wanted);
  view.finish_primary_poll(after, 150);
  view.finish_primary_poll(view.begin_primary_poll(), 180);
  CHECK(view.snapshot().primary_offset_since(wanted) == 150u);
}

TEST_CASE("a write older than every remembered poll waits for a later, larger offset",
          "[upstream][sentinel]") {
  ReplicaView view;
  const auto wanted = view.next_primary_poll();
  for (int i = 0; i < 100; ++i) view.finish_primary_poll(view.begin_primary_poll(), 1000 + i);
  const auto offset = view.snapshot().primary_offset_since(wanted);
  REQUIRE(offset);
  CHECK(*offset > 1000u);
}
