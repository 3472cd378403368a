// Tests the failover hold of one io thread's Sentinel links against a real redis-server: held
// commands reach the new primary in the order they came, a hold that outlives failover_hold
// answers them with an error (never sent), no client-owned link opens while a hold is on, and an
// upstream ACL user's links follow the thread's own.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "redis_server_process.hpp"
#include "upstream/sentinel/sentinel_links.hpp"

using namespace corral;
using namespace std::chrono_literals;

namespace {

// Every outcome, in the order they arrived.
class Recorder final : public upstream::ReplyTarget {
 public:
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    outcomes.push_back(std::to_string(tag) + " " + std::string(reply));
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    outcomes.push_back(std::to_string(tag) + " -" + std::string(error));
  }
  std::vector<std::string> outcomes;
};

config::UpstreamSettings sentinel_settings(config::Duration hold) {
  config::UpstreamSettings settings;
  settings.sentinel = config::SentinelSettings{};
  settings.sentinel->master = "m";
  settings.sentinel->failover_hold = hold;
  return settings;
}

std::string incr(const char* key) {
  return "*2\r\n$4\r\nINCR\r\n$" + std::to_string(std::strlen(key)) + "\r\n" + key + "\r\n";
}

}  // namespace

TEST_CASE("held commands go to the new primary in order", "[upstream][sentinel]") {
  test::RedisServerProcess redis;
  boost::asio::io_context io;
  auto status = std::make_shared<upstream::SentinelStatus>();
  upstream::SentinelLinks links(io.get_executor(), sentinel_settings(5000ms), nullptr, nullptr,
                                status);
  auto recorder = std::make_shared<Recorder>();
  links.hold();
  for (std::uint64_t tag = 1; tag <= 3; ++tag) {
    REQUIRE(links.send_shared(0, 0, incr("held:n"), recorder, tag, 2));
  }
  CHECK_FALSE(links.dedicated_link(0, 2));  // no MULTI on a primary about to be demoted
  io.run_for(50ms);
  CHECK(recorder->outcomes.empty());  // held, not sent
  links.use_primary({"127.0.0.1", redis.port()});
  io.run_for(300ms);
  CHECK(recorder->outcomes == std::vector<std::string>{"1 :1\r\n", "2 :2\r\n", "3 :3\r\n"});
  CHECK(status->held_commands == 3);
  CHECK(links.dedicated_link(0, 2));
  links.close();
  io.run_for(20ms);
}

TEST_CASE("a hold past failover_hold answers with an error", "[upstream][sentinel]") {
  boost::asio::io_context io;
  auto status = std::make_shared<upstream::SentinelStatus>();
  upstream::SentinelLinks links(io.get_executor(), sentinel_settings(50ms), nullptr, nullptr,
                                status);
  auto recorder = std::make_shared<Recorder>();
  CHECK_FALSE(links.send_shared(0, 0, incr("k"), recorder, 1, 2));  // no primary known yet
  links.hold();
  REQUIRE(links.send_shared(0, 0, incr("k"), recorder, 2, 2));
  io.run_for(200ms);
  CHECK(recorder->outcomes ==
        std::vector<std::string>{"2 -" + std::string(upstream::kErrFailoverHold)});
  CHECK(status->hold_expired == 1);
}

TEST_CASE("an aborted failover releases what was held", "[upstream][sentinel]") {
  test::RedisServerProcess redis;
  boost::asio::io_context io;
  auto status = std::make_shared<upstream::SentinelStatus>();
  upstream::SentinelLinks links(io.get_executor(), sentinel_settings(5000ms), nullptr, nullptr,
                                status);
  auto recorder = std::make_shared<Recorder>();
  links.use_primary({"127.0.0.1", redis.port()});
  links.hold();
  REQUIRE(links.send_shared(0, 0, incr("aborted:n"), recorder, 7, 2));
  links.release();
  io.run_for(300ms);
  CHECK(recorder->outcomes == std::vector<std::string>{"7 :1\r\n"});
  links.close();
  io.run_for(20ms);
}

TEST_CASE("a user's links follow the primary and the hold of the thread's own",
          "[upstream][sentinel]") {
  test::RedisServerProcess first;
  test::RedisServerProcess second;
  boost::asio::io_context io;
  auto status = std::make_shared<upstream::SentinelStatus>();
  upstream::SentinelLinks links(io.get_executor(), sentinel_settings(5000ms), nullptr, nullptr,
                                status);
  links.use_primary({"127.0.0.1", first.port()});
  // The default user has no password there: any password logs it in.
  auto user = links.follower({"default", "any", 0});
  auto recorder = std::make_shared<Recorder>();
  REQUIRE(user->send_shared(0, 0, incr("user:n"), recorder, 1, 2));
  io.run_for(300ms);
  links.hold();
  REQUIRE(user->send_shared(0, 0, incr("user:n"), recorder, 2, 2));
  CHECK_FALSE(user->dedicated_link(0, 2));
  io.run_for(50ms);
  CHECK(recorder->outcomes == std::vector<std::string>{"1 :1\r\n"});  // the second held
  links.use_primary({"127.0.0.1", second.port()});
  io.run_for(300ms);
  // ":1" again: the held INCR ran on the new primary, where user:n did not exist.
  CHECK(recorder->outcomes == std::vector<std::string>{"1 :1\r\n", "2 :1\r\n"});
  CHECK(user->dedicated_link(0, 2));
  links.close();
  io.run_for(20ms);
}
