// TurnQueue: the deferred items of one turn run together from one posted handler, in order,
// after what was ready before them; their objects live until they run or the context shuts down.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "upstream/turn_queue.hpp"

namespace asio = boost::asio;
using corral::upstream::TurnQueue;

namespace {

struct Recorder {
  std::string log;
  TurnQueue* queue = nullptr;
  std::weak_ptr<Recorder> self;
};

void append_argument(void* object, std::uint64_t argument) {
  static_cast<Recorder*>(object)->log += std::to_string(argument);
}

}  // namespace

TEST_CASE("turn queue: one handler runs every item deferred before it, in order", "[unit][turn]") {
  asio::io_context io;
  auto& queue = asio::use_service<TurnQueue>(io);
  auto recorder = std::make_shared<Recorder>();
  asio::post(io, [&] { recorder->log += "a"; });
  queue.defer(recorder, append_argument, 1);
  asio::post(io, [&] {
    recorder->log += "b";
    queue.defer(recorder, append_argument, 3);  // after the queue's handler was posted
  });
  queue.defer(recorder, append_argument, 2);
  CHECK(queue.pending() == 2);
  io.run();
  // 1 and 2 ran together after "a", ahead of "b"; 3, deferred later, needed a second handler.
  CHECK(recorder->log == "a12b3");
  CHECK(queue.posts() == 2);
  CHECK(queue.pending() == 0);
}

TEST_CASE("turn queue: an item deferring another runs it in the next turn", "[unit][turn]") {
  asio::io_context io;
  auto& queue = asio::use_service<TurnQueue>(io);
  auto recorder = std::make_shared<Recorder>();
  recorder->queue = &queue;
  recorder->self = recorder;
  queue.defer(recorder, [](void* object, std::uint64_t) {
    auto* self = static_cast<Recorder*>(object);
    self->log += "x";
    self->queue->defer(self->self.lock(), append_argument, 9);
  });
  io.run_one();
  CHECK(recorder->log == "x");
  CHECK(queue.pending() == 1);
  CHECK(queue.posts() == 2);
  io.run();
  CHECK(recorder->log == "x9");
}

TEST_CASE("turn queue: the object lives until its item ran, or the context shut down",
          "[unit][turn]") {
  std::weak_ptr<Recorder> watched;
  {
    asio::io_context io;
    auto& queue = asio::use_service<TurnQueue>(io);
    auto recorder = std::make_shared<Recorder>();
    watched = recorder;
    queue.defer(std::move(recorder), append_argument, 7);
    CHECK_FALSE(watched.expired());  // only the queue holds it now
    io.run();
    CHECK(watched.expired());  // ran, then dropped
    auto never_run = std::make_shared<Recorder>();
    watched = never_run;
    queue.defer(std::move(never_run), append_argument, 8);
    CHECK_FALSE(watched.expired());
  }
  CHECK(watched.expired());  // the context went without running it: the queue let it go
}
