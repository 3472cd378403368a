// Tests the reading of Sentinel's pub/sub payloads (as sentinel.c writes them), of
// GET-MASTER-ADDR-BY-NAME's and ROLE's replies, and that every subscribed channel parses.
#include <catch2/catch.hpp>

#include <string>

#include "upstream/sentinel/sentinel_event.hpp"

using namespace corral::upstream;

TEST_CASE("failover announcements, promotion, switch and abort", "[upstream][sentinel]") {
  const auto starting =
      parse_sentinel_event("+failover-state-send-slaveof-noone",
                           "slave 127.0.0.1:6381 127.0.0.1 6381 @ mymaster 127.0.0.1 6380");
  REQUIRE(starting);
  CHECK(starting->kind == SentinelEventKind::failover_starting);
  CHECK(starting->master == "mymaster");

  const auto promoted = parse_sentinel_event(
      "+promoted-slave", "slave 127.0.0.1:6381 127.0.0.1 6381 @ mymaster 127.0.0.1 6380");
  REQUIRE(promoted);
  CHECK(promoted->kind == SentinelEventKind::promoted);
  CHECK(promoted->primary.host == "127.0.0.1");
  CHECK(promoted->primary.port == 6381);

  const auto switched =
      parse_sentinel_event("+switch-master", "mymaster 127.0.0.1 6380 127.0.0.1 6381");
  REQUIRE(switched);
  CHECK(switched->kind == SentinelEventKind::switched);
  CHECK(switched->master == "mymaster");
  CHECK(switched->primary.port == 6381);

  const auto aborted =
      parse_sentinel_event("-failover-abort-no-good-slave", "master mymaster 127.0.0.1 6380");
  REQUIRE(aborted);
  CHECK(aborted->kind == SentinelEventKind::aborted);
  CHECK(aborted->master == "mymaster");
}

TEST_CASE("every step of a failover before the promotion announces it", "[upstream][sentinel]") {
  // As sentinel.c writes them: the master's own steps, then the chosen replica's.
  for (const char* channel : {"+try-failover", "+elected-leader", "+failover-state-select-slave"}) {
    INFO(channel);
    const auto event = parse_sentinel_event(channel, "master mymaster 127.0.0.1 6380");
    REQUIRE(event);
    CHECK(event->kind == SentinelEventKind::failover_starting);
    CHECK(event->master == "mymaster");
    CHECK(event->from.port == 6380);
  }
  for (const char* channel : {"+selected-slave", "+failover-state-send-slaveof-noone",
                              "+failover-state-wait-promotion"}) {
    INFO(channel);
    const auto event = parse_sentinel_event(
        channel, "slave 127.0.0.1:6381 127.0.0.1 6381 @ mymaster 127.0.0.1 6380");
    REQUIRE(event);
    CHECK(event->kind == SentinelEventKind::failover_starting);
    CHECK(event->master == "mymaster");
    CHECK(event->from.host == "127.0.0.1");
    CHECK(event->from.port == 6380);  // the primary being replaced, not the chosen replica
  }
}

TEST_CASE("payloads that cannot be read are ignored", "[upstream][sentinel]") {
  CHECK_FALSE(parse_sentinel_event("+switch-master", "mymaster 127.0.0.1 6380 127.0.0.1"));
  CHECK_FALSE(parse_sentinel_event("+switch-master", "m 127.0.0.1 6380 127.0.0.1 70000"));
  CHECK_FALSE(parse_sentinel_event("+switch-master", "m 127.0.0.1 6380 127.0.0.1 63x1"));
  CHECK_FALSE(parse_sentinel_event("+promoted-slave", "master m 127.0.0.1 6380"));
  CHECK_FALSE(parse_sentinel_event("+sdown", "master mymaster 127.0.0.1 6380"));
  CHECK_FALSE(parse_sentinel_event("+failover-state-wait-promotion", ""));
  CHECK_FALSE(parse_sentinel_event("+try-failover", "master mymaster 127.0.0.1"));
}

TEST_CASE("events about a replica change the replica list", "[upstream][sentinel]") {
  for (const char* channel :
       {"+slave", "+sdown", "-sdown", "+slave-reconf-done", "+convert-to-slave"}) {
    INFO(channel);
    const auto event =
        parse_sentinel_event(channel, "slave 10.0.0.2:6379 10.0.0.2 6379 @ m 10.0.0.1 6379");
    REQUIRE(event);
    CHECK(event->kind == SentinelEventKind::replicas_changed);
    CHECK(event->master == "m");
  }
  // The primary's own +sdown is not about its replicas (the discovery loop handles it).
  CHECK_FALSE(parse_sentinel_event("-sdown", "master mymaster 127.0.0.1 6380"));
}

TEST_CASE("every subscribed channel is one the parser reads", "[upstream][sentinel]") {
  for (const auto channel : sentinel_event_channels()) {
    INFO(std::string(channel));
    const std::string payload = channel == "+switch-master"
                                    ? "m 10.0.0.1 6379 10.0.0.2 6379"
                                    : "slave 10.0.0.2:6379 10.0.0.2 6379 @ m 10.0.0.1 6379";
    CHECK(parse_sentinel_event(channel, payload));
  }
}

TEST_CASE("GET-MASTER-ADDR-BY-NAME and ROLE replies", "[upstream][sentinel]") {
  const auto named = parse_master_address("*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6380\r\n");
  REQUIRE(named);
  CHECK(named->host == "127.0.0.1");
  CHECK(named->port == 6380);
  CHECK_FALSE(parse_master_address("*-1\r\n"));  // no master of that name
  CHECK_FALSE(parse_master_address("-ERR unknown\r\n"));

  CHECK(role_is_primary("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"));
  CHECK_FALSE(role_is_primary(
      "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6380\r\n$9\r\nconnected\r\n:1\r\n"));
  CHECK_FALSE(role_is_primary("-LOADING\r\n"));
}
