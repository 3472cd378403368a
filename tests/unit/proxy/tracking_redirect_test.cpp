// CLIENT TRACKING REDIRECT through the dispatcher over a recording upstream: the Corral id
// becomes the sink's Redis id, the sink's pushes reach the target client in its protocol's form,
// a target that left is reported, and GETREDIR / TRACKINGINFO name Corral's ids.
#include <catch2/catch.hpp>

#include "proxy/links/tracking_redirect.hpp"
#include "proxy/local/client_registry.hpp"
#include "recording_upstream.hpp"

using namespace corral;
using namespace corral::proxy;
using namespace corral::proxy::test;
using session::Action;

namespace {
// A client as a session opens it, whose posted deliveries run at once into its replies (tag 0).
struct Posted {
  explicit Posted(Proxy& proxy) : slots(std::make_shared<Replies>()) {
    session::Peer peer{
        "127.0.0.1:5000",
        "127.0.0.1:6380",
        [] {},
        [](std::chrono::milliseconds) {},
        [this](std::function<void(upstream::ReplyTarget&)> deliver) { deliver(*slots); },
        nullptr,
        {}};
    handler = proxy.dispatcher.open_session(peer);
  }
  Action send(std::initializer_list<std::string_view> words) {
    const std::vector<std::string_view> argv(words);
    const resp::Request request{argv, {}};
    return handler->handle(request, handler->classify(request), ++tag, slots, 0);
  }
  std::string reply() const { return slots->replies.count(tag) ? slots->replies.at(tag) : ""; }
  std::string pushed() {
    std::string out;
    if (auto it = slots->replies.find(0); it != slots->replies.end()) {
      out = it->second;
      slots->replies.erase(it);
    }
    return out;
  }
  std::string id() const { return std::to_string(handler->client_id()); }

  std::unique_ptr<session::ClientHandler> handler;
  std::shared_ptr<Replies> slots;
  std::uint64_t tag = 0;
};

constexpr std::string_view kKeys = "*1\r\n$1\r\nk\r\n";
const std::string kSinkPush = std::string(">2\r\n$10\r\ninvalidate\r\n") + std::string(kKeys);

// The sink is the first dedicated connection opened (before the tracker's own).
RecordingLink& sink(Proxy& proxy) { return *proxy.links.dedicated.at(0); }
RecordingLink& tracker_link(Proxy& proxy) { return *proxy.links.dedicated.at(1); }
}  // namespace

TEST_CASE("REDIRECT names the sink's Redis id and invalidations reach the target", "[tracking]") {
  Proxy proxy;
  Posted target(proxy);
  Posted tracker(proxy);
  REQUIRE(target.send({"HELLO", "3"}) == Action::done);
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", target.id(), "BCAST"}) ==
          Action::done);
  REQUIRE(proxy.links.dedicated_protocols.at(0) == 3);  // the sink hears pushes
  CHECK(tracker_link(proxy).bytes().back() ==
        wire({"CLIENT", "TRACKING", "ON", "REDIRECT", "1000", "BCAST"}));
  tracker_link(proxy).answer("+OK\r\n");
  CHECK(tracker.reply() == "+OK\r\n");

  sink(proxy).unsolicited->on_reply(0, kSinkPush);
  CHECK(target.pushed() == kSinkPush);  // RESP3: the push as Redis sends it

  REQUIRE(target.send({"HELLO", "2"}) == Action::done);
  sink(proxy).unsolicited->on_reply(0, kSinkPush);
  CHECK(target.pushed().empty());  // RESP2 and not subscribed: nothing, as from Redis

  REQUIRE(tracker.send({"CLIENT", "GETREDIR"}) == Action::done);
  tracker_link(proxy).answer(":1000\r\n");
  CHECK(tracker.reply() == ":" + target.id() + "\r\n");
}

TEST_CASE("A subscribed RESP2 target gets __redis__:invalidate messages", "[tracking]") {
  Proxy proxy;
  Posted target(proxy);
  Posted tracker(proxy);
  REQUIRE(target.send({"SUBSCRIBE", "__redis__:invalidate"}) == Action::done);
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", target.id()}) == Action::done);
  RecordingLink& sink_link = *proxy.links.dedicated.at(1);  // after the target's own
  proxy.links.dedicated.at(2)->answer("+OK\r\n");
  sink_link.unsolicited->on_reply(0, kSinkPush);
  CHECK(target.pushed() ==
        "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n" + std::string(kKeys));
}

TEST_CASE("A target that left is reported as Redis reports it", "[tracking]") {
  Proxy proxy;
  auto target = std::make_unique<Posted>(proxy);
  Posted tracker(proxy);
  REQUIRE(tracker.send({"HELLO", "3"}) == Action::done);
  const std::string gone = target->id();
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", gone}) == Action::done);
  tracker_link(proxy).answer("+OK\r\n");
  target.reset();

  sink(proxy).unsolicited->on_reply(0, kSinkPush);
  CHECK(tracker.pushed() == ">2\r\n$21\r\ntracking-redir-broken\r\n:" + gone + "\r\n");

  REQUIRE(tracker.send({"CLIENT", "TRACKINGINFO"}) == Action::done);
  tracker_link(proxy).answer(
      "%3\r\n$5\r\nflags\r\n~1\r\n$2\r\non\r\n$8\r\nredirect\r\n:1000\r\n$8\r\nprefixes\r\n*0\r\n");
  CHECK(tracker.reply() ==
        "%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$15\r\nbroken_redirect\r\n$8\r\nredirect\r\n:" +
            gone + "\r\n$8\r\nprefixes\r\n*0\r\n");

  // Redis checks the id when tracking is enabled: a client that left cannot be named again.
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", gone}) == Action::done);
  CHECK(tracker.reply() == "-ERR The client ID you want redirect to does not exist\r\n");
}

TEST_CASE("OFF drops the redirect and closes the sink once Redis agrees", "[tracking]") {
  Proxy proxy;
  Posted target(proxy);
  Posted tracker(proxy);
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", target.id()}) == Action::done);
  tracker_link(proxy).answer("+OK\r\n");
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "OFF", "REDIRECT", target.id()}) == Action::done);
  CHECK(tracker_link(proxy).bytes().back() == wire({"CLIENT", "TRACKING", "OFF"}));
  CHECK(sink(proxy).closes == 0);
  tracker_link(proxy).answer("+OK\r\n");
  CHECK(sink(proxy).closes == 1);
}

TEST_CASE("A refused option leaves the redirect as it was", "[tracking]") {
  Proxy proxy;
  Posted first(proxy);
  Posted second(proxy);
  Posted tracker(proxy);
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", first.id()}) == Action::done);
  tracker_link(proxy).answer("+OK\r\n");
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", second.id(), "BCAST"}) ==
          Action::done);
  tracker_link(proxy).answer("-ERR You can't switch BCAST mode on/off before disabling\r\n");
  REQUIRE(first.send({"HELLO", "3"}) == Action::done);
  REQUIRE(second.send({"HELLO", "3"}) == Action::done);
  sink(proxy).unsolicited->on_reply(0, kSinkPush);
  CHECK(first.pushed() == kSinkPush);
  CHECK(second.pushed().empty());
}

TEST_CASE("REDIRECT's id is checked as Redis checks it", "[tracking]") {
  Proxy proxy;
  Posted tracker(proxy);
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", "abc"}) == Action::done);
  CHECK(tracker.reply() == "-ERR value is not an integer or out of range\r\n");
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", tracker.id(), "REDIRECT",
                        tracker.id()}) == Action::done);
  CHECK(tracker.reply() == "-ERR A client can only redirect to a single other client\r\n");
  CHECK(proxy.links.dedicated.empty());  // nothing opened for a refused command
}

TEST_CASE("The sink still opening holds the command, in order", "[tracking]") {
  Proxy proxy;
  Posted tracker(proxy);
  proxy.links.hold_client_ids = true;
  CHECK(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", tracker.id()}) ==
        Action::wait_then_retry);
  sink(proxy).held_client_id->on_reply(1, ":55\r\n");
  proxy.links.hold_client_ids = false;
  CHECK(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", tracker.id()}) == Action::done);
  CHECK(tracker_link(proxy).bytes().back() == wire({"CLIENT", "TRACKING", "ON", "REDIRECT", "55"}));
}

TEST_CASE("rename_redirect rewrites RESP2 TRACKINGINFO", "[tracking]") {
  const std::string resp2 =
      "*6\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:9\r\n$8\r\n"
      "prefixes\r\n*1\r\n$1\r\na\r\n";
  CHECK(rename_redirect(resp2, 9, 4, false) ==
        "*6\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:4\r\n$8\r\n"
        "prefixes\r\n*1\r\n$1\r\na\r\n");
  CHECK(rename_redirect(resp2, 9, 4, true) ==
        "*6\r\n$5\r\nflags\r\n*3\r\n$2\r\non\r\n$5\r\nbcast\r\n$15\r\nbroken_redirect\r\n$8\r\n"
        "redirect\r\n:4\r\n$8\r\nprefixes\r\n*1\r\n$1\r\na\r\n");
  CHECK(rename_redirect(":0\r\n", 9, 4, false) == ":0\r\n");  // GETREDIR of another redirect
  CHECK(rename_redirect("-ERR x\r\n", 9, 4, true) == "-ERR x\r\n");
}

TEST_CASE("On a Redis Cluster REDIRECT is refused with a clear error", "[tracking]") {
  Proxy proxy;
  Posted tracker(proxy);
  ClientState state;
  state.id = tracker.handler->client_id();
  const std::string target_id = tracker.id();  // argv views it: it must outlive them
  const std::vector<std::string_view> argv{"CLIENT", "TRACKING", "ON", "REDIRECT", target_id};
  std::string reply;
  const auto plan = plan_tracking(state, *proxy.upstream, true, argv, tracker.slots, reply);
  CHECK(plan.step == TrackingStep::answered);
  CHECK(reply.starts_with("-ERR Corral does not support CLIENT TRACKING REDIRECT on a Redis"));
  CHECK(proxy.links.dedicated.empty());
  const std::vector<std::string_view> plain{"CLIENT", "TRACKING", "ON"};
  CHECK(plan_tracking(state, *proxy.upstream, true, plain, tracker.slots, reply).step ==
        TrackingStep::forward);
}

TEST_CASE("A sink lost before Redis confirmed the redirect ends the tracker's state",
          "[tracking]") {
  Proxy proxy;
  Posted target(proxy);
  Posted tracker(proxy);
  REQUIRE(tracker.send({"CLIENT", "TRACKING", "ON", "REDIRECT", target.id()}) == Action::done);
  sink(proxy).unsolicited->on_failure(0, "ERR upstream connection lost");
  CHECK(tracker_link(proxy).closes == 0);
  tracker_link(proxy).answer("+OK\r\n");
  CHECK(tracker_link(proxy).closes == 1);
}
