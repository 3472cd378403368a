// The client's connection-mode state machine (proxy/client_state.hpp), driven by the table's
// StateChange column alone.
#include <catch2/catch.hpp>

#include <initializer_list>
#include <string_view>
#include <vector>

#include "proxy/client_state.hpp"

namespace corral::proxy {
namespace {

using State = ConnectionMode::State;

void apply(ConnectionMode& mode, StateChange change,
           std::initializer_list<std::string_view> words) {
  const std::vector<std::string_view> argv(words);
  mode.apply(change, argv);
}

}  // namespace

TEST_CASE("a transaction: MULTI, a refusal, EXEC", "[connection_mode]") {
  ConnectionMode mode;
  CHECK_FALSE(mode.holds_connection());
  apply(mode, StateChange::watch, {"WATCH", "k"});
  CHECK(mode.state() == State::watching);
  CHECK(mode.holds_redis_state());
  apply(mode, StateChange::multi, {"MULTI"});
  CHECK(mode.in_multi());
  // WATCH and UNWATCH inside MULTI change nothing: EXEC ends both.
  apply(mode, StateChange::unwatch, {"UNWATCH"});
  CHECK(mode.state() == State::multi);
  mode.refused_in_multi();
  CHECK(mode.state() == State::multi_aborted);
  CHECK(mode.in_multi());
  apply(mode, StateChange::exec, {"EXEC"});
  CHECK(mode.state() == State::plain);
  CHECK_FALSE(mode.holds_connection());
  // Outside MULTI a refusal is just an error reply.
  mode.refused_in_multi();
  CHECK(mode.state() == State::plain);
}

TEST_CASE("CLIENT LIST's multi: the commands Redis queues, -1 outside a transaction",
          "[connection_mode]") {
  ConnectionMode mode;
  CHECK(mode.queued() == -1);
  apply(mode, StateChange::multi, {"MULTI"});
  CHECK(mode.queued() == 0);
  apply(mode, StateChange::none, {"SET", "k", "v"});
  apply(mode, StateChange::unwatch, {"UNWATCH"});
  // Run at once inside MULTI, not queued: a nested MULTI, WATCH.
  apply(mode, StateChange::multi, {"MULTI"});
  apply(mode, StateChange::watch, {"WATCH", "k"});
  CHECK(mode.queued() == 2);
  // A doomed transaction queues nothing more, as in Redis.
  mode.refused_in_multi();
  apply(mode, StateChange::none, {"GET", "k"});
  CHECK(mode.queued() == 2);
  apply(mode, StateChange::exec, {"EXEC"});
  CHECK(mode.queued() == -1);
  apply(mode, StateChange::multi, {"MULTI"});
  CHECK(mode.queued() == 0);
}

TEST_CASE("pins outlive transactions", "[connection_mode]") {
  ConnectionMode mode;
  apply(mode, StateChange::tracking, {"CLIENT", "TRACKING", "ON"});
  CHECK(mode.state() == State::plain);
  CHECK(mode.holds_connection());
  CHECK(mode.holds_redis_state());
  apply(mode, StateChange::multi, {"MULTI"});
  apply(mode, StateChange::discard, {"DISCARD"});
  CHECK(mode.holds_redis_state());
  apply(mode, StateChange::tracking, {"CLIENT", "TRACKING", "off"});
  CHECK_FALSE(mode.holds_connection());

  apply(mode, StateChange::no_evict, {"CLIENT", "NO-EVICT", "on"});
  CHECK(mode.holds_connection());
  CHECK_FALSE(mode.holds_redis_state());
  mode.reset();
  CHECK_FALSE(mode.holds_connection());
}

TEST_CASE("tunnels: subscribed ends with the subscriptions, MONITOR never", "[connection_mode]") {
  ConnectionMode mode;
  apply(mode, StateChange::subscribe, {"SUBSCRIBE", "c"});
  CHECK(mode.tunneling());
  mode.ended_subscriptions();
  CHECK_FALSE(mode.tunneling());
  CHECK_FALSE(mode.holds_connection());

  apply(mode, StateChange::monitor, {"MONITOR"});
  CHECK(mode.tunneling());
  mode.ended_subscriptions();
  CHECK(mode.tunneling());
  mode.reset();
  CHECK_FALSE(mode.tunneling());
}

TEST_CASE("watched keys outlive a subscription, and EXEC or DISCARD without MULTI",
          "[connection_mode]") {
  ConnectionMode mode;
  // EXEC or DISCARD without MULTI is Redis's error: the keys stay watched.
  apply(mode, StateChange::watch, {"WATCH", "k"});
  apply(mode, StateChange::exec, {"EXEC"});
  apply(mode, StateChange::discard, {"DISCARD"});
  CHECK(mode.state() == State::watching);

  apply(mode, StateChange::watch, {"WATCH", "k"});
  apply(mode, StateChange::subscribe, {"SUBSCRIBE", "c"});
  CHECK(mode.tunneling());
  mode.ended_subscriptions();
  CHECK(mode.state() == State::watching);
  CHECK(mode.holds_redis_state());
  apply(mode, StateChange::multi, {"MULTI"});
  apply(mode, StateChange::exec, {"EXEC"});
  CHECK_FALSE(mode.holds_connection());

  // UNWATCH while subscribed (RESP3) leaves nothing watched.
  apply(mode, StateChange::watch, {"WATCH", "k"});
  apply(mode, StateChange::subscribe, {"SUBSCRIBE", "c"});
  apply(mode, StateChange::unwatch, {"UNWATCH"});
  mode.ended_subscriptions();
  CHECK(mode.state() == State::plain);
  CHECK_FALSE(mode.holds_connection());
}

TEST_CASE("changes that are not the mode's leave it alone", "[connection_mode]") {
  // CLIENT REPLY among them: Corral emulates it, Redis's connection never sees it.
  for (auto change : {StateChange::none, StateChange::select, StateChange::quit, StateChange::reset,
                      StateChange::exec, StateChange::unwatch, StateChange::reply_mode}) {
    ConnectionMode mode;
    apply(mode, change, {"X", "1"});
    CHECK(mode.state() == State::plain);
    CHECK_FALSE(mode.holds_connection());
  }
}

TEST_CASE("a SUBSCRIBE queued in MULTI subscribes only if EXEC runs it", "[connection_mode]") {
  ConnectionMode mode;
  apply(mode, StateChange::multi, {"MULTI"});
  apply(mode, StateChange::subscribe, {"SUBSCRIBE", "ch"});
  CHECK(mode.in_multi());  // still queuing: EXEC must reach Redis as EXEC
  CHECK_FALSE(mode.tunneling());
  apply(mode, StateChange::exec, {"EXEC"});
  CHECK(mode.take_queued_subscribe());
  CHECK_FALSE(mode.take_queued_subscribe());  // once

  apply(mode, StateChange::multi, {"MULTI"});
  apply(mode, StateChange::subscribe, {"SUBSCRIBE", "ch"});
  apply(mode, StateChange::discard, {"DISCARD"});
  CHECK_FALSE(mode.take_queued_subscribe());
}

}  // namespace corral::proxy
