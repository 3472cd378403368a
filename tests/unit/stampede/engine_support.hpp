// Test support for the read-through engine: an origin whose fetches the test completes by hand
// (our own seam, not a Redis mock), a reply recorder, and a fixture with a manual clock, a seeded
// random source and an io_context run in the test thread.
#pragma once

#include <utility>

#include <catch2/catch.hpp>

#include <prometheus/registry.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache/clock.hpp"
#include "cache/random.hpp"
#include "origin/origin.hpp"
#include "resp/encoder.hpp"
#include "stampede/policy/cache_runtime.hpp"
#include "stampede/read/read_through.hpp"

namespace corral::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

inline std::string bulk(std::string_view value) {
  std::string out;
  resp::append_bulk(out, value);
  return out;
}
inline const std::string kNil = "$-1\r\n";

// Fetches wait until the test answers them; answers run on the thread that fetched.
class ManualOrigin final : public origin::Origin {
 public:
  explicit ManualOrigin(asio::any_io_executor executor) : executor_(std::move(executor)) {}

  std::string_view name() const override { return "redis"; }
  void fetch(std::span<const std::string_view> argv, origin::FetchCallback done) override {
    std::lock_guard lock(mutex_);
    calls_.push_back({{argv.begin(), argv.end()}, std::move(done), {}});
  }

  // A conditional fetch: recorded like any other, with the validators it carried.
  void revalidate(std::span<const std::string_view> argv, origin::FetchReason,
                  std::string_view validators, origin::FetchCallback done) override {
    std::lock_guard lock(mutex_);
    calls_.push_back({{argv.begin(), argv.end()}, std::move(done), std::string(validators)});
  }

  std::size_t calls() const {
    std::lock_guard lock(mutex_);
    return calls_.size();
  }
  // The validators fetch number `call` carried (empty: an unconditional fetch).
  std::string validators(std::size_t call) const {
    std::lock_guard lock(mutex_);
    return calls_.at(call).validators;
  }
  // Answers fetch number `call` with what an HTTP origin's headers said about it.
  void answer_caching(std::size_t call, origin::Outcome outcome, std::string reply,
                      origin::ResponseCaching caching) {
    origin::FetchCallback done = take(call);
    asio::post(executor_, [done = std::move(done), outcome, reply = std::move(reply),
                           caching = std::move(caching)] {
      origin::FetchResult result{outcome, reply, std::chrono::milliseconds(100)};
      result.caching = caching;
      done(result);
    });
  }
  std::vector<std::string> argv(std::size_t call) const {
    std::lock_guard lock(mutex_);
    return calls_.at(call).argv;
  }
  // Answers fetch number `call` (posted to the fetching thread, as a real origin would).
  void answer(std::size_t call, origin::Outcome outcome, std::string reply,
              std::chrono::nanoseconds duration = 100ms) {
    origin::FetchCallback done = take(call);
    asio::post(executor_, [done = std::move(done), outcome, reply = std::move(reply), duration] {
      done({outcome, reply, duration});
    });
  }
  // Answers fetch number `call` as fleet mode does: with the shared copy and its lifetime.
  void answer_shared(std::size_t call, std::string_view value, origin::SharedLifetime lifetime) {
    origin::FetchCallback done = take(call);
    asio::post(executor_, [done = std::move(done), reply = bulk(value), lifetime] {
      done({origin::Outcome::value, reply, std::chrono::milliseconds(1), lifetime});
    });
  }
  void value(std::size_t call, std::string_view value, std::chrono::nanoseconds d = 100ms) {
    answer(call, origin::Outcome::value, bulk(value), d);
  }
  void fail(std::size_t call) {
    answer(call, origin::Outcome::failure, "ERR upstream connection lost");
  }

 private:
  // The callback of fetch number `call`, taken once.
  origin::FetchCallback take(std::size_t call) {
    origin::FetchCallback done;
    {
      std::lock_guard lock(mutex_);
      done = std::move(calls_.at(call).done);
    }
    REQUIRE(done);
    return done;
  }
  struct Call {
    std::vector<std::string> argv;
    origin::FetchCallback done;
    std::string validators;
  };
  asio::any_io_executor executor_;
  mutable std::mutex mutex_;
  std::vector<Call> calls_;
};

// Records what reaches a client, and on which thread.
class Recorder final : public upstream::ReplyTarget {
 public:
  void on_reply(std::uint64_t tag, std::string_view reply) override {
    std::lock_guard lock(mutex_);
    replies_[tag] = std::string(reply);
    threads_[tag] = std::this_thread::get_id();
    ++count_;
  }
  void on_failure(std::uint64_t tag, std::string_view error) override {
    std::lock_guard lock(mutex_);
    replies_[tag] = "-" + std::string(error) + "\r\n";
    threads_[tag] = std::this_thread::get_id();
    ++count_;
  }
  bool has(std::uint64_t tag) const {
    std::lock_guard lock(mutex_);
    return replies_.count(tag) != 0;
  }
  std::string reply(std::uint64_t tag) const {
    std::lock_guard lock(mutex_);
    const auto found = replies_.find(tag);
    return found == replies_.end() ? std::string("<none>") : found->second;
  }
  std::thread::id thread(std::uint64_t tag) const {
    std::lock_guard lock(mutex_);
    return threads_.at(tag);
  }
  std::size_t count() const {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::string> replies_;
  std::map<std::uint64_t, std::thread::id> threads_;
  std::size_t count_ = 0;
};

inline config::PolicySettings policy(std::string prefix = "p:") {
  config::PolicySettings p;
  p.prefix = std::move(prefix);
  p.commands = {"GET", "MGET", "HGET", "EXISTS", "LRANGE"};
  p.ttl = 10s;
  p.beta = 0;
  p.grace = 0s;
  p.stale_if_error = 0s;
  p.wait_timeout = 5s;
  return p;
}

// One io thread's engine over a manual origin, driven from the test thread.
struct Node {
  Node(stampede::CacheRuntime& runtime, cache::Random& random)
      : origin(std::make_shared<ManualOrigin>(io.get_executor())),
        read_through(
            io.get_executor(), runtime,
            stampede::ReadThroughOptions{origin, &random, /*sweeper=*/false, nullptr, {}}) {}
  asio::io_context io{1};
  std::shared_ptr<ManualOrigin> origin;
  stampede::ReadThrough read_through;
};

struct Fixture {
  explicit Fixture(std::vector<config::PolicySettings> policies = {policy()}) {
    settings.policies = std::move(policies);
    settings.cache.max_memory = 64 * 1024 * 1024;
    settings.cache.shards = 4;
    runtime = std::make_unique<stampede::CacheRuntime>(settings, clock,
                                                       std::make_shared<prometheus::Registry>());
    node = std::make_unique<Node>(*runtime, random);
  }
  ~Fixture() {
    // Run what is pending so nothing refers to the runtime after it is gone.
    node->io.poll();
    node.reset();
  }

  // One request through the engine; true when the engine took it.
  bool read(std::vector<std::string_view> argv, std::uint64_t tag,
            const std::shared_ptr<upstream::ReplyTarget>& target) {
    std::string command(argv.front());
    for (auto& c : command) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return node->read_through.handle_read(command, argv, tag, target);
  }
  bool get(std::string_view key, std::uint64_t tag) { return read({"GET", key}, tag, client); }
  std::shared_ptr<upstream::ReplyTarget> write(std::vector<std::string_view> argv,
                                               std::vector<std::size_t> keys) {
    return node->read_through.wrap_write(argv, keys, client);
  }
  void run() {
    node->io.restart();
    node->io.poll();
  }
  // Lets real time pass for timers (wait_timeout) while running the io_context.
  void run_for(std::chrono::milliseconds d) {
    node->io.restart();
    node->io.run_for(d);
  }
  ManualOrigin& origin() { return *node->origin; }
  stampede::PolicyStatsSnapshot stats(std::string_view prefix = "p:") const {
    return *runtime->stats_for(prefix);
  }

  cache::ManualClock clock;
  cache::SeededRandom random{42};
  config::Settings settings;
  std::unique_ptr<stampede::CacheRuntime> runtime;
  std::unique_ptr<Node> node;
  std::shared_ptr<Recorder> client = std::make_shared<Recorder>();
};

}  // namespace corral::test
