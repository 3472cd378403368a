// ReadyProbe: stalled while a PING goes unanswered past its deadline, ready again once one is
// answered; an error reply or a failure counts as stalled too.
#include <utility>

#include <catch2/catch.hpp>

#include <atomic>
#include <deque>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "upstream/single/ready_probe.hpp"

using namespace corral::upstream;
using namespace std::chrono_literals;

namespace {
// Holds the PINGs it is sent; the test answers them.
class HeldLinks final : public Links {
 public:
  bool send_shared(int, std::size_t, std::string_view command, std::shared_ptr<ReplyTarget> target,
                   std::uint64_t tag, int) override {
    if (refuse) return false;
    CHECK(command == "*1\r\n$4\r\nPING\r\n");
    held.emplace_back(std::move(target), tag);
    return true;
  }
  std::shared_ptr<Link> dedicated_link(int, int) override { return nullptr; }

  void answer(std::string_view reply) {
    REQUIRE_FALSE(held.empty());
    auto [target, tag] = held.front();
    held.pop_front();
    target->on_reply(tag, reply);
  }

  std::deque<std::pair<std::shared_ptr<ReplyTarget>, std::uint64_t>> held;
  bool refuse = false;
};
}  // namespace

TEST_CASE("ReadyProbe counts a thread stalled while its PING is unanswered", "[ready_probe]") {
  boost::asio::io_context io;
  HeldLinks links;
  std::atomic<int> stalled{0};
  auto probe = std::make_shared<ReadyProbe>(io.get_executor(), links, 0, 10ms, 50ms, stalled);
  probe->start();
  io.run_for(25ms);
  REQUIRE(links.held.size() == 1);
  CHECK(stalled == 0);
  links.answer("+PONG\r\n");
  io.run_for(30ms);
  REQUIRE_FALSE(links.held.empty());
  CHECK(stalled == 0);
  // The upstream freezes: no answer past the deadline.
  io.run_for(120ms);
  CHECK(links.held.size() == 1);  // one PING at a time
  CHECK(stalled == 1);
  links.answer("+PONG\r\n");
  CHECK(stalled == 0);
  io.run_for(30ms);
  links.answer("-LOADING Redis is loading the dataset in memory\r\n");
  CHECK(stalled == 1);
  io.run_for(30ms);
  auto [target, tag] = links.held.front();
  links.held.pop_front();
  target->on_failure(tag, "ERR upstream connection lost");
  CHECK(stalled == 1);
  io.run_for(30ms);
  links.answer("+PONG\r\n");
  CHECK(stalled == 0);
  probe.reset();
  io.run_for(30ms);
}
