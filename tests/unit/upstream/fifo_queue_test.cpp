// FifoQueue: first in first out through skips and compaction, storage bounded by the deepest
// queue rather than the number of items that passed, popped items released at once.
#include <catch2/catch.hpp>

#include <memory>

#include "upstream/fifo_queue.hpp"

using corral::upstream::FifoQueue;

TEST_CASE("fifo queue: order kept while items pass through, storage bounded by the depth",
          "[unit][fifo]") {
  FifoQueue<int> queue;
  int next_in = 0;
  int next_out = 0;
  for (int i = 0; i < 40; ++i) queue.push_back(next_in++);  // a pipeline 40 deep
  std::size_t warmed = 0;
  for (int round = 0; round < 100000; ++round) {
    queue.push_back(next_in++);
    REQUIRE(queue.front() == next_out);
    queue.pop_front();
    ++next_out;
    if (round == 1000) warmed = queue.capacity();
  }
  CHECK(queue.size() == 40);
  CHECK(queue.capacity() == warmed);  // 100,000 items passed; nothing grew after the first 1,000
  CHECK(queue.capacity() <= 256);
  int expected = next_out;
  for (int item : queue) CHECK(item == expected++);
  while (!queue.empty()) {
    CHECK(queue.front() == next_out++);
    queue.pop_front();
  }
  CHECK(next_out == next_in);
}

TEST_CASE("fifo queue: a popped item is released when it leaves", "[unit][fifo]") {
  FifoQueue<std::shared_ptr<int>> queue;
  auto first = std::make_shared<int>(1);
  auto second = std::make_shared<int>(2);
  queue.push_back(first);
  queue.push_back(second);
  CHECK(first.use_count() == 2);
  queue.pop_front();
  CHECK(first.use_count() == 1);
  CHECK(*queue.front() == 2);
}

TEST_CASE("fifo queue: moving out leaves an empty queue that works", "[unit][fifo]") {
  FifoQueue<int> queue;
  for (int i = 0; i < 5; ++i) queue.push_back(i);
  queue.pop_front();
  FifoQueue<int> taken = std::move(queue);
  CHECK(taken.size() == 4);
  CHECK(taken.front() == 1);
  CHECK(queue.empty());  // NOLINT(bugprone-use-after-move): a moved-from queue is empty
  queue.push_back(9);
  CHECK(queue.size() == 1);
  CHECK(queue.front() == 9);
  queue = std::move(taken);
  CHECK(queue.size() == 4);
  CHECK(taken.empty());  // NOLINT(bugprone-use-after-move)
}
