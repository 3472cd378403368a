// QueuedLocalCommands: EXEC's reply with each queued local command's answer in its place, by the
// way it reached the transaction (placeholder, forwarded, merged).
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "proxy/local/queued_local.hpp"
#include "recording_upstream.hpp"

using namespace corral;
using namespace corral::proxy;
using Kind = QueuedLocalCommands::Kind;

namespace {
class Runner final : public QueuedLocalRunner {
 public:
  void run_queued(std::span<const std::string_view> argv, std::string& answer) override {
    answer = "+ran " + std::string(argv[0]) + "\r\n";
  }
  void ran_in_exec(std::span<const std::string_view> argv, bool taken) override {
    forwarded.push_back(std::string(argv[0]) + (taken ? " taken" : " failed"));
  }
  void merge_queued(std::span<const std::string_view> argv, std::string_view upstream_answer,
                    std::string& answer) override {
    merged_into.emplace_back(upstream_answer);
    answer = "+merged " + std::string(argv[0]) + "\r\n";
  }
  void exec_answered() override { ++answered; }

  std::vector<std::string> forwarded;
  std::vector<std::string> merged_into;  // the upstream answers merge_queued was given
  int answered = 0;
};

std::vector<std::string_view> args(std::string_view name) { return {name}; }
}  // namespace

TEST_CASE("EXEC's reply gets each queued local command's answer by the way it was queued",
          "[queued_local]") {
  QueuedLocalCommands queued;
  queued.add(0, args("CLIENT-ID"), Kind::placeholder);
  queued.add(2, args("INFO"), Kind::merged);
  queued.add(3, args("PAUSE"), Kind::forwarded);
  queued.add(4, args("COMMAND"), Kind::merged);
  auto runner = std::make_shared<Runner>();
  auto client = std::make_shared<test::Replies>();
  const auto target = queued.run_at_exec(client, runner);

  SECTION("the transaction ran: placeholders answered, merges made, Redis's errors kept") {
    target->on_reply(7, "*5\r\n+PONG\r\n:1\r\n$4\r\ntext\r\n+OK\r\n-NOPERM no\r\n");
    CHECK(client->replies[7] ==
          "*5\r\n+ran CLIENT-ID\r\n:1\r\n+merged INFO\r\n+OK\r\n-NOPERM no\r\n");
    CHECK(runner->merged_into == std::vector<std::string>{"$4\r\ntext\r\n"});
    CHECK(runner->forwarded == std::vector<std::string>{"PAUSE taken"});
    CHECK(runner->answered == 1);
  }
  SECTION("a failed WATCH: nothing runs, the nil passes") {
    target->on_reply(7, "*-1\r\n");
    CHECK(client->replies[7] == "*-1\r\n");
    CHECK(runner->forwarded.empty());
  }
  SECTION("EXECABORT: the error passes") {
    target->on_reply(7, "-EXECABORT Transaction discarded\r\n");
    CHECK(client->replies[7] == "-EXECABORT Transaction discarded\r\n");
    CHECK(runner->answered == 1);
  }
}
