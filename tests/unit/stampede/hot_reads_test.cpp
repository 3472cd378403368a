// Tests of one io thread's hot-key reads against recorded servers: a fill goes to its key's
// server, redirected to that server's tracking link; a fill the server turns away (MOVED) or loses
// is answered by the routed path and not stored, and a MOVED drops its slot's hot entries.
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cache/clock.hpp"
#include "resp/encoder.hpp"
#include "stampede/hot/hot_cache.hpp"
#include "stampede/hot/hot_reads.hpp"
#include "upstream/link.hpp"

using namespace corral;
using namespace corral::stampede;

namespace {

std::string wire(std::vector<std::string_view> argv) {
  std::string out;
  resp::append_command(out, argv);
  return out;
}

// One server connection: records what is sent; the test answers the oldest command.
class ServerLink final : public upstream::Link {
 public:
  bool send(std::string_view command, std::shared_ptr<upstream::ReplyTarget> target,
            std::uint64_t tag, bool) override {
    if (state_ == State::closed) return false;
    sent.emplace_back(command);
    pending.push_back({tag, std::move(target)});
    return true;
  }
  bool send_untracked(std::string_view) override { return false; }
  void set_unsolicited_target(std::shared_ptr<upstream::ReplyTarget> target) override {
    unsolicited = std::move(target);
  }
  State state() const override { return state_; }
  std::size_t in_flight() const override { return pending.size(); }
  void close() override { state_ = State::closed; }

  void answer(std::string_view reply) {
    REQUIRE_FALSE(pending.empty());
    auto [tag, target] = std::move(pending.front());
    pending.pop_front();
    target->on_reply(tag, reply);
  }
  // The connection is lost: what was in flight fails, then the watch hears of it.
  void die() {
    state_ = State::closed;
    while (!pending.empty()) {
      auto [tag, target] = std::move(pending.front());
      pending.pop_front();
      target->on_failure(tag, "ERR upstream connection lost");
    }
    if (unsolicited) unsolicited->on_failure(0, "ERR upstream connection lost");
  }

  std::vector<std::string> sent;
  std::deque<std::pair<std::uint64_t, std::shared_ptr<upstream::ReplyTarget>>> pending;
  std::shared_ptr<upstream::ReplyTarget> unsolicited;

 private:
  State state_ = State::ready;
};

class Reader final : public upstream::ReplyTarget {
 public:
  void on_reply(std::uint64_t, std::string_view reply) override { replies.emplace_back(reply); }
  void on_failure(std::uint64_t, std::string_view error) override {
    replies.push_back("failed: " + std::string(error));
  }
  std::vector<std::string> replies;
};

// Two servers: keys starting with "a" live on "n1", the others on "n2"; a key's partition is its
// second character (a stand-in for its cluster slot).
struct Servers {
  Servers() : hot(settings()) {
    hot.publish(std::make_shared<const HotSet>(std::vector<std::string>{"a1", "a2", "ax", "b1"}));
    hot.link_up("n1", "11");
    hot.link_up("n2", "22");
    HotFillRoutes routes{
        [](std::string_view key) { return std::string(key[0] == 'a' ? "n1" : "n2"); },
        [](std::string_view key) { return static_cast<int>(key[1]); },
        [this](const std::string& server) {
          auto link = std::make_shared<ServerLink>();
          links[server] = link;
          return link;
        },
        [this](std::string_view key, std::shared_ptr<upstream::ReplyTarget> target) {
          rerouted.emplace_back(std::string(key), std::move(target));
        },
        [this] { return upstream_epoch; }};
    reads = std::make_shared<HotReads>(hot, std::move(routes), clock);
  }
  static config::HotKeySettings settings() {
    config::HotKeySettings s;
    s.cache = true;
    s.max_bytes = 1 << 20;
    return s;
  }
  bool served(std::string_view key, const std::shared_ptr<Reader>& reader) {
    return reads->serve(key, 1, reader);
  }
  // Answers the connection's naming and tracking commands, then the fill's GET and PTTL.
  void answer_fill(ServerLink& link, std::string_view get, std::string_view pttl = ":-1\r\n") {
    while (link.pending.size() > 2) link.answer("+OK\r\n");
    link.answer(get);
    link.answer(pttl);
  }
  bool cached(std::string_view key) const {
    return hot.store().peek({key, "GET"}, clock.now()).has_value();
  }

  cache::ManualClock clock;
  HotCache hot;
  std::map<std::string, std::shared_ptr<ServerLink>> links;
  std::vector<std::pair<std::string, std::shared_ptr<upstream::ReplyTarget>>> rerouted;
  std::uint64_t upstream_epoch = 0;  // what the routes report as the upstream's generation
  std::shared_ptr<HotReads> reads;
};

}  // namespace

TEST_CASE("a hot key is filled from its own server, tracked by that server's link", "[hotkeys]") {
  Servers s;
  auto reader = std::make_shared<Reader>();
  REQUIRE(s.served("a1", reader));
  REQUIRE(s.served("b1", reader));
  auto& n1 = *s.links.at("n1");
  auto& n2 = *s.links.at("n2");
  CHECK(n1.sent == std::vector<std::string>{wire({"CLIENT", "SETNAME", "corral-hot-fill"}),
                                            wire({"CLIENT", "TRACKING", "on", "REDIRECT", "11"}),
                                            wire({"GET", "a1"}), wire({"PTTL", "a1"})});
  CHECK(n2.sent[1] == wire({"CLIENT", "TRACKING", "on", "REDIRECT", "22"}));
  CHECK(n2.sent[2] == wire({"GET", "b1"}));
  s.answer_fill(n1, "$2\r\nv1\r\n");
  s.answer_fill(n2, "$2\r\nw1\r\n");
  CHECK(reader->replies == std::vector<std::string>{"$2\r\nv1\r\n", "$2\r\nw1\r\n"});
  CHECK(s.cached("a1"));
  CHECK(s.cached("b1"));
  // A hit: nothing more is sent; a second key of n1 reuses its connection and redirect.
  REQUIRE(s.served("a1", reader));
  CHECK(reader->replies.back() == "$2\r\nv1\r\n");
  REQUIRE(s.served("a2", reader));
  CHECK(s.links.size() == 2);
  CHECK(n1.sent.size() == 6);
  CHECK(n1.sent[4] == wire({"GET", "a2"}));
}

TEST_CASE(
    "a fill turned away with MOVED answers from the routed path, unstored, and drops its "
    "slot's hot entries",
    "[hotkeys]") {
  Servers s;
  auto reader = std::make_shared<Reader>();
  // Cached earlier: "ax" in another slot than "a1", "b1" in the same one (on another server).
  REQUIRE(s.served("ax", reader));
  s.answer_fill(*s.links.at("n1"), "$1\r\nx\r\n");
  REQUIRE(s.served("b1", reader));
  s.answer_fill(*s.links.at("n2"), "$1\r\nb\r\n");
  REQUIRE(s.cached("ax"));
  REQUIRE(s.cached("b1"));

  REQUIRE(s.served("a1", reader));
  auto& n1 = *s.links.at("n1");
  n1.answer("-MOVED 1 127.0.0.1:7001\r\n");
  // Rerouted, not answered with the redirection; the slot's entries went with it.
  REQUIRE(s.rerouted.size() == 1);
  CHECK(s.rerouted[0].first == "a1");
  CHECK(reader->replies.size() == 2);
  CHECK_FALSE(s.cached("b1"));
  CHECK(s.cached("ax"));
  n1.answer("-MOVED 1 127.0.0.1:7001\r\n");  // the PTTL
  s.rerouted[0].second->on_reply(0, "$3\r\nnew\r\n");
  CHECK(reader->replies.back() == "$3\r\nnew\r\n");
  CHECK_FALSE(s.cached("a1"));
  CHECK(s.hot.fills(false) == 1);
}

TEST_CASE("a fill lost with its connection answers from the routed path and flushes the hot keys",
          "[hotkeys]") {
  Servers s;
  auto reader = std::make_shared<Reader>();
  REQUIRE(s.served("b1", reader));
  s.answer_fill(*s.links.at("n2"), "$1\r\nb\r\n");
  REQUIRE(s.served("a1", reader));
  s.links.at("n1")->die();
  REQUIRE(s.rerouted.size() == 1);
  s.rerouted[0].second->on_reply(0, "$1\r\na\r\n");
  CHECK(reader->replies.back() == "$1\r\na\r\n");
  // Redis forgot what the lost connection read: no hot entry can count on its tracking.
  CHECK_FALSE(s.cached("b1"));
  // The next fill opens a new connection to the server.
  REQUIRE(s.served("a1", reader));
  CHECK(s.links.at("n1")->sent[2] == wire({"GET", "a1"}));
}

TEST_CASE("no fill is stored when the server refused the tracking redirect or a link changed",
          "[hotkeys]") {
  Servers s;
  auto reader = std::make_shared<Reader>();
  REQUIRE(s.served("a1", reader));
  auto& n1 = *s.links.at("n1");
  SECTION("refused") {
    n1.answer("+OK\r\n");
    n1.answer("-ERR The client ID you want redirect to does not exist\r\n");
  }
  SECTION("another server's link reconnected meanwhile") {
    n1.answer("+OK\r\n");
    n1.answer("+OK\r\n");
    s.hot.link_up("n2", "23");
  }
  n1.answer("$1\r\nv\r\n");
  n1.answer(":-1\r\n");
  CHECK(reader->replies == std::vector<std::string>{"$1\r\nv\r\n"});
  CHECK_FALSE(s.cached("a1"));
  CHECK(s.hot.fills(false) == 1);
}

TEST_CASE("after a reload replaced the upstream, fills wait for its link and use new connections",
          "[hotkeys]") {
  Servers s;
  auto reader = std::make_shared<Reader>();
  REQUIRE(s.served("a1", reader));
  const auto first_n1 = s.links.at("n1");
  s.answer_fill(*first_n1, "$1\r\nv\r\n");
  REQUIRE(s.cached("a1"));
  s.hot.invalidate("a1");
  // The new upstream's link for n1 is not up yet: the link of the previous one ("n1", client
  // 11) must not be used, and no fill goes out.
  s.upstream_epoch = 1;
  CHECK_FALSE(s.served("a1", reader));
  s.hot.link_up(hot_link_name(1, "n1"), "31");
  REQUIRE(s.served("a1", reader));
  const auto second_n1 = s.links.at("n1");
  REQUIRE(second_n1 != first_n1);
  CHECK(first_n1->state() == upstream::Link::State::closed);
  CHECK(second_n1->sent[1] == wire({"CLIENT", "TRACKING", "on", "REDIRECT", "31"}));
}
