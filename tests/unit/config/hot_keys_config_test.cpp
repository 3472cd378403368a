// Tests of the hot_keys.cache settings: defaults, and the errors of combinations that cannot work.
#include <catch2/catch.hpp>

#include "config/loader.hpp"
#include "test_support.hpp"

using namespace corral::config;
using namespace corral::config::test;

TEST_CASE("hot_keys.cache is off by default and reads its limits", "[config]") {
  CHECK_FALSE(must_load("").hot_keys.cache);
  const auto s = must_load(yaml(R"(
hot_keys: {cache: true, min_rate: 250.5, max_keys: 100, max_bytes: 2mb}
)"));
  CHECK(s.hot_keys.cache);
  CHECK(s.hot_keys.min_rate == 250.5);
  CHECK(s.hot_keys.max_keys == 100);
  CHECK(s.hot_keys.max_bytes == 2 * 1024 * 1024);
}

TEST_CASE("hot_keys.cache refuses what it cannot honour", "[config]") {
  CHECK(errors_of(yaml(R"(
hot_keys: {cache: true, detect: false}
)")) == std::vector<std::string>{"t.yaml:1: hot_keys.cache: needs hot_keys.detect: true (hot keys "
                                 "are found by detection)"});
  CHECK(errors_of(yaml(R"(
hot_keys: {cache: true, capacity: 64, max_keys: 65}
)")) == std::vector<std::string>{"t.yaml:1: hot_keys.max_keys: must be <= hot_keys.capacity (64): "
                                 "only that many keys are reported per window"});
  CHECK(errors_of(yaml(R"(
hot_keys: {cache: true, max_bytes: 1kb}
)")) == std::vector<std::string>{"t.yaml:1: hot_keys.max_bytes: must be >= 64kb"});
  CHECK(errors_of(yaml(R"(
hot_keys: {cache: true, min_rate: 0}
)")) == std::vector<std::string>{"t.yaml:1: hot_keys.min_rate: must be >= 0.001"});
}

TEST_CASE("hot_keys.cache works on a cluster too", "[config]") {
  const auto s = must_load(yaml(R"(
upstream: {cluster: [redis://127.0.0.1:7000]}
hot_keys: {cache: true}
)"));
  CHECK(s.upstream.cluster);
  CHECK(s.hot_keys.cache);
}
