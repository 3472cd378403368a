// Tests of the recompute-time smoothing used for XFetch's delta.
#include <catch2/catch.hpp>

#include "stampede/core/ewma.hpp"

using namespace corral::stampede;
using namespace std::chrono_literals;

TEST_CASE("the first sample is taken as is", "[ewma]") { CHECK(ewma({}, 120ms) == 120ms); }

TEST_CASE("later samples move delta by alpha of the difference", "[ewma]") {
  CHECK(ewma(100ms, 200ms, 0.3) == 130ms);
  CHECK(ewma(100ms, 0ms, 0.5) == 50ms);
  CHECK(ewma(100ms, -5ms, 0.5) == 50ms);  // negative samples count as zero
}

TEST_CASE("a steady sample converges and one outlier moves it by alpha only", "[ewma]") {
  corral::cache::Duration delta{};
  for (int i = 0; i < 50; ++i) delta = ewma(delta, 200ms);
  CHECK(delta == 200ms);
  delta = ewma(delta, 2000ms);
  CHECK(delta == 200ms + (2000ms - 200ms) * 3 / 10);
}
