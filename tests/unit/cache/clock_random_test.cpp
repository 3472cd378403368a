// Tests of the injectable time and randomness sources and of the cache key encoding.
#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "cache/cache_key.hpp"
#include "cache/clock.hpp"
#include "cache/random.hpp"

using namespace corral::cache;
using namespace std::chrono_literals;

TEST_CASE("ManualClock moves only when advanced, never backwards", "[clock]") {
  ManualClock clock;
  const TimePoint start = clock.now();
  CHECK(clock.now() == start);
  clock.advance(1500ms);
  CHECK(clock.now() - start == 1500ms);
  clock.advance(-1s);
  CHECK(clock.now() - start == 1500ms);
  // Far enough from the epoch that tests may subtract hours.
  CHECK(start.time_since_epoch() > 24h);
}

TEST_CASE("SystemClock is steady", "[clock]") {
  const Clock& clock = SystemClock::instance();
  const TimePoint a = clock.now();
  CHECK(clock.now() >= a);
}

TEST_CASE("SeededRandom is reproducible and within (0, 1]", "[random]") {
  SeededRandom a(42);
  SeededRandom b(42);
  SeededRandom c(43);
  bool differs = false;
  double sum = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const double x = a.uniform();
    REQUIRE(x == b.uniform());
    differs = differs || x != c.uniform();
    REQUIRE(x > 0.0);
    REQUIRE(x <= 1.0);
    sum += x;
  }
  CHECK(differs);
  CHECK(sum / kDraws == Approx(0.5).margin(0.005));
}

TEST_CASE("thread_random gives each thread a working source", "[random]") {
  Random& random = thread_random();
  const double x = random.uniform();
  CHECK(x > 0.0);
  CHECK(x <= 1.0);
  CHECK(&thread_random() == &random);
}

TEST_CASE("encode_cache_key is injective across the key/variant split", "[cache_key]") {
  using namespace std::string_view_literals;
  const std::set<std::string> encoded = {
      encode_cache_key({"a\0b"sv, "c"sv}),      encode_cache_key({"a"sv, "b\0c"sv}),
      encode_cache_key({"a\0HGET"sv, "GET"sv}), encode_cache_key({"a"sv, "HGET\0GET"sv}),
      encode_cache_key({""sv, "GET"sv}),        encode_cache_key({"GET"sv, ""sv}),
  };
  CHECK(encoded.size() == 6);
  const std::string long_key(300, 'k');
  CHECK(encode_cache_key({long_key, "GET"}) != encode_cache_key({long_key + "G", "ET"}));
}

TEST_CASE("SystemClock answers with the open TurnTime's reading on its thread only", "[clock]") {
  const Clock& clock = SystemClock::instance();
  CHECK(TurnTime::current() == nullptr);
  TimePoint reading;
  TimePoint other_thread;
  {
    const TurnTime turn;
    reading = turn.now();
    // Time passes inside the turn; the clock keeps answering with the turn's reading.
    while (SteadyClock::now() == reading) {
    }
    CHECK(clock.now() == reading);
    {
      const TurnTime inner;  // nested: keeps the outer reading, so time never goes back
      CHECK(inner.now() == reading);
      CHECK(clock.now() == reading);
    }
    CHECK(clock.now() == reading);
    std::thread([&] { other_thread = clock.now(); }).join();
    CHECK(other_thread > reading);
  }
  CHECK(TurnTime::current() == nullptr);
  CHECK(clock.now() > reading);
}
