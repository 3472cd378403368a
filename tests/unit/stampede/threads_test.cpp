// The flight table is process-wide: waiters on another io thread join a fetch led elsewhere and
// are woken on their own thread.
#include <boost/asio/executor_work_guard.hpp>
#include <future>

#include "engine_support.hpp"

using namespace corral;
using namespace corral::test;

namespace {
// A second io thread with its own engine, running until destroyed.
struct ThreadNode {
  explicit ThreadNode(stampede::CacheRuntime& runtime) : node(runtime, random) {
    thread = std::thread([this] { node.io.run(); });
  }
  ~ThreadNode() {
    work.reset();
    node.io.stop();
    thread.join();
  }
  // Runs `fn` on the node's thread and waits for it.
  template <class Fn>
  auto on_thread(Fn fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    asio::post(node.io, [&task] { task(); });
    return result.get();
  }

  cache::SeededRandom random{7};
  Node node;
  asio::executor_work_guard<asio::io_context::executor_type> work{node.io.get_executor()};
  std::thread thread;
};

bool wait_for(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(2ms);
  return done();
}
}  // namespace

TEST_CASE("waiters on another io thread share the fetch and wake on their thread", "[threads]") {
  Fixture f;
  ThreadNode other(*f.runtime);
  REQUIRE(f.get("p:1", 1));  // leads, on the test thread
  // Catch2 assertions are not thread-safe: the other thread only reports back.
  bool taken = true;
  const auto other_id = other.on_thread([&] {
    for (std::uint64_t tag = 2; tag <= 11; ++tag) {
      std::string_view argv[] = {"GET", "p:1"};
      taken = other.node.read_through.handle_read("get", argv, tag, f.client) && taken;
    }
    return std::this_thread::get_id();
  });
  REQUIRE(taken);
  CHECK(other.node.origin->calls() == 0);
  CHECK(f.origin().calls() == 1);
  f.origin().value(0, "v");
  f.run();
  REQUIRE(wait_for([&] { return f.client->count() == 11; }));
  CHECK(f.client->thread(1) == std::this_thread::get_id());
  for (std::uint64_t tag = 2; tag <= 11; ++tag) {
    CHECK(f.client->reply(tag) == bulk("v"));
    CHECK(f.client->thread(tag) == other_id);
  }
  CHECK(f.stats().lookup(stampede::LookupOutcome::coalesced) == 10);
}

TEST_CASE("a waiter on another thread times out there while the fetch goes on", "[threads]") {
  auto p = policy();
  p.wait_timeout = 20ms;
  p.on_overflow = config::OnOverflow::error;
  Fixture f({p});
  ThreadNode other(*f.runtime);
  REQUIRE(f.get("p:1", 1));
  bool taken = false;
  const auto other_id = other.on_thread([&] {
    std::string_view argv[] = {"GET", "p:1"};
    taken = other.node.read_through.handle_read("get", argv, 2, f.client);
    return std::this_thread::get_id();
  });
  REQUIRE(taken);
  REQUIRE(wait_for([&] { return f.client->has(2); }));
  CHECK(f.client->reply(2).starts_with("-ERR corral: timed out"));
  CHECK(f.client->thread(2) == other_id);
  f.origin().value(0, "v");
  f.run();
  CHECK(f.client->has(1));
  CHECK(f.runtime->store().peek({"p:1", "GET"}, f.clock.now()));
}
