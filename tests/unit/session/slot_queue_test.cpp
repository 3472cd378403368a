// SlotQueue: FIFO order through wrap-around and growth, and no storage held once empty.
#include <catch2/catch.hpp>

#include <string>

#include "session/slot_queue.hpp"

using corral::session::SlotQueue;

TEST_CASE("SlotQueue keeps request order through wrap-around and growth") {
  SlotQueue<std::string> queue;
  int next_in = 0;
  int next_out = 0;
  // Mixed pushes and pops: the ring wraps many times and grows from 4 to 32 slots.
  for (int round = 0; round < 50; ++round) {
    const int pushes = 1 + (round * 7) % 29;
    for (int i = 0; i < pushes; ++i) queue.emplace_back() = "request " + std::to_string(next_in++);
    const int pops = static_cast<int>(queue.size()) - (round % 3);
    for (int i = 0; i < pops && !queue.empty(); ++i) {
      REQUIRE(queue.front() == "request " + std::to_string(next_out++));
      queue.pop_front();
    }
    for (std::size_t i = 0; i < queue.size(); ++i) {
      REQUIRE(queue[i] == "request " + std::to_string(next_out + static_cast<int>(i)));
    }
  }
  CHECK(queue.capacity() == 32);
}

TEST_CASE("SlotQueue holds no storage once a request/response client's slot is done") {
  SlotQueue<std::string> queue;
  CHECK(queue.capacity() == 0);
  for (int i = 0; i < 100; ++i) {
    queue.emplace_back() = std::string(100, 'x');
    CHECK(queue.capacity() == SlotQueue<std::string>::kBaseCapacity);
    queue.pop_front();
    CHECK(queue.capacity() == 0);
  }
  queue.emplace_back();
  queue.pop_back();  // a slot handed back (a held request) empties it as well
  CHECK(queue.capacity() == 0);
}
