// The cluster KeyedCaller over the recording cluster seam: a fleet or versioned script goes to
// its key's slot owner, follows MOVED, falls back to EVAL when that node answers NOSCRIPT, and
// commands for every primary go to the primary they name.
#include <utility>

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include "recording_cluster.hpp"
#include "resp/encoder.hpp"
#include "upstream/cluster/cluster_caller.hpp"
#include "upstream/cluster/key_slot.hpp"
#include "upstream/keyed_call.hpp"
#include "upstream/script.hpp"

namespace corral::proxy::test {
namespace {

constexpr std::string_view kDigest = "0123456789abcdef0123456789abcdef01234567";

// A key of each shard of two_shards(): slot < 8192 on port 7000, the rest on 7001.
std::string key_on(std::uint16_t port) {
  for (int i = 0;; ++i) {
    std::string key = "k" + std::to_string(i);
    if ((upstream::key_slot(key) < 8192) == (port == 7000)) return key;
  }
}

struct CallReplies {
  std::vector<std::string> got;
  std::shared_ptr<upstream::ReplyTarget> target() {
    return upstream::CallbackTarget::make([this](std::string_view reply, bool failed) {
      got.push_back((failed ? "failed: " : "") + std::string(reply));
    });
  }
};

struct CallerFixture {
  boost::asio::io_context io;
  RecordingClusterLinks links;
  std::shared_ptr<upstream::KeyedCaller> caller =
      upstream::make_cluster_caller(io.get_executor(), links, {0}, 3);
  CallReplies replies;

  void run() {
    io.restart();
    io.poll();
  }
  bool run_script(const upstream::Script& script, const std::string& key) {
    const std::string_view keys[] = {key};
    const std::string_view args[] = {"a1"};
    const bool sent = upstream::run(*caller, script, keys, args, replies.target(), 7);
    run();
    return sent;
  }
};

bool starts(const std::string& bytes, std::string_view command) {
  return bytes.find(command) != std::string::npos;
}

}  // namespace

TEST_CASE("a keyed script goes to its slot's owner, learning the digest there", "[keyed_caller]") {
  CallerFixture f;
  const upstream::Script script("return 1");
  REQUIRE(f.run_script(script, key_on(7001)));
  CHECK_FALSE(f.links.used(7000));
  auto& node = f.links.at(7001);
  REQUIRE(node.bytes().size() == 2);
  CHECK(starts(node.bytes()[0], "SCRIPT\r\n$4\r\nLOAD"));
  CHECK(starts(node.bytes()[1], "$4\r\nEVAL\r\n"));
  node.answer("$40\r\n" + std::string(kDigest) + "\r\n");
  node.answer(":1\r\n");
  CHECK(f.replies.got == std::vector<std::string>{":1\r\n"});
}

TEST_CASE("a node that lacks the script answers NOSCRIPT once and gets the EVAL",
          "[keyed_caller]") {
  CallerFixture f;
  const upstream::Script script("return 2");
  REQUIRE(f.run_script(script, key_on(7001)));
  f.links.at(7001).answer("$40\r\n" + std::string(kDigest) + "\r\n");
  f.links.at(7001).answer(":2\r\n");
  // The digest was learned on 7001; 7000 never saw the script.
  REQUIRE(f.run_script(script, key_on(7000)));
  auto& other = f.links.at(7000);
  REQUIRE(other.bytes().size() == 1);
  CHECK(starts(other.bytes()[0], "$7\r\nEVALSHA\r\n$40\r\n" + std::string(kDigest)));
  other.answer("-NOSCRIPT No matching script. Please use EVAL.\r\n");
  f.run();
  REQUIRE(other.bytes().size() == 2);
  CHECK(starts(other.bytes()[1], "$4\r\nEVAL\r\n$8\r\nreturn 2"));
  other.answer(":2\r\n");
  CHECK(f.replies.got == std::vector<std::string>{":2\r\n", ":2\r\n"});
}

TEST_CASE("a keyed call follows MOVED to the slot's new owner", "[keyed_caller]") {
  CallerFixture f;
  const std::string key = key_on(7000);
  const auto slot = upstream::key_slot(key);
  const std::string_view argv[] = {"GET", key};
  std::string command;
  resp::append_command(command, argv);
  REQUIRE(f.caller->send(key, command, f.replies.target(), 3));
  CHECK_FALSE(f.links.used(7000));  // started from the event loop, never within send()
  f.run();
  f.links.at(7000).answer("-MOVED " + std::to_string(slot) + " 127.0.0.1:7001\r\n");
  REQUIRE(f.links.at(7001).bytes() == std::vector<std::string>{command});
  CHECK(f.links.map.owner[slot] == 1);
  f.links.at(7001).answer("$1\r\nv\r\n");
  CHECK(f.replies.got == std::vector<std::string>{"$1\r\nv\r\n"});
}

TEST_CASE("commands for every primary go to the primary they name", "[keyed_caller]") {
  CallerFixture f;
  CHECK(f.caller->primaries() == std::vector<std::string>{"127.0.0.1:7000", "127.0.0.1:7001"});
  CHECK(f.caller->by_slot());
  const std::string scan = "*2\r\n$4\r\nSCAN\r\n$1\r\n0\r\n";
  REQUIRE(f.caller->send_to_primary("127.0.0.1:7001", scan, f.replies.target(), 1));
  REQUIRE(f.caller->send_to_primary("127.0.0.1:7999", scan, f.replies.target(), 2));
  f.run();
  CHECK_FALSE(f.links.used(7000));
  REQUIRE(f.links.at(7001).bytes() == std::vector<std::string>{scan});
  REQUIRE(f.replies.got.size() == 1);
  CHECK(f.replies.got[0].starts_with("failed: ERR cluster node 127.0.0.1:7999"));
  f.links.at(7001).answer("*2\r\n$1\r\n0\r\n*0\r\n");
  CHECK(f.replies.got.size() == 2);
}

TEST_CASE("the upstream's keyed caller follows redirects up to upstream.max_redirects",
          "[keyed_caller]") {
  // Not a number of the caller's (read-through's fleet caller once passed 5 of its own).
  for (const int max_redirects : {1, 7}) {
    auto settings = ClusterProxy::cluster_settings();
    settings.upstream.max_redirects = max_redirects;
    ClusterProxy c(settings);
    auto caller = c.proxy.upstream->keyed_caller({0});
    CallReplies replies;
    const std::string key = key_on(7000);
    const auto slot = upstream::key_slot(key);
    const std::string_view argv[] = {"GET", key};
    std::string command;
    resp::append_command(command, argv);
    REQUIRE(caller->send(key, command, replies.target(), 1));
    c.proxy.io.poll();
    // The two nodes keep sending the slot to each other.
    for (int hop = 0; hop <= max_redirects; ++hop) {
      const std::uint16_t from = hop % 2 == 0 ? 7000 : 7001;
      const std::uint16_t to = hop % 2 == 0 ? 7001 : 7000;
      c.links.at(from).answer("-MOVED " + std::to_string(slot) +
                              " 127.0.0.1:" + std::to_string(to) + "\r\n");
    }
    REQUIRE(replies.got.size() == 1);
    CHECK(replies.got[0].starts_with("failed: ERR too many cluster redirects (max_redirects " +
                                     std::to_string(max_redirects) + ")"));
    CHECK(c.links.at(7000).sent.size() + c.links.at(7001).sent.size() ==
          static_cast<std::size_t>(max_redirects + 1));
  }
}

}  // namespace corral::proxy::test
