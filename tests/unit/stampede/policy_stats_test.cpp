// Tests of the per-policy counters behind corral_version_reads_total and
// corral_cache_stale_serves_total: bounded version slots, stale serves by reason.
#include <algorithm>

#include <catch2/catch.hpp>

#include "stampede/policy/policy_stats.hpp"

using namespace corral::stampede;

namespace {
std::uint64_t reads_of(const PolicyStats& stats, std::uint64_t version) {
  const auto slots = stats.version_reads();
  const auto it = std::find_if(slots.begin(), slots.end(),
                               [&](const VersionReads& slot) { return slot.version == version; });
  return it == slots.end() ? 0 : it->reads;
}

std::size_t used_slots(const PolicyStats& stats) {
  const auto slots = stats.version_reads();
  return static_cast<std::size_t>(std::count_if(
      slots.begin(), slots.end(), [](const VersionReads& slot) { return slot.version != 0; }));
}
}  // namespace

TEST_CASE("version reads are counted per version", "[policy_stats]") {
  PolicyStats stats("feat:");
  CHECK(used_slots(stats) == 0);
  for (int i = 0; i < 3; ++i) stats.version_read(7);
  stats.version_read(8);
  CHECK(reads_of(stats, 7) == 3);
  CHECK(reads_of(stats, 8) == 1);
  CHECK(used_slots(stats) == 2);
}

TEST_CASE("version reads keep only the last few versions", "[policy_stats]") {
  PolicyStats stats("feat:");
  for (std::uint64_t v = 1; v <= 20; ++v) {
    for (std::uint64_t i = 0; i < v; ++i) stats.version_read(v);
  }
  CHECK(used_slots(stats) == kVersionSlots);
  // The newest versions keep their own counts; older ones gave their slots up.
  for (std::uint64_t v = 20; v > 20 - kVersionSlots; --v) CHECK(reads_of(stats, v) == v);
  CHECK(reads_of(stats, 20 - kVersionSlots) == 0);
  // A version coming back (a rollback) starts again from zero in its slot.
  stats.version_read(20 - kVersionSlots);
  CHECK(reads_of(stats, 20 - kVersionSlots) == 1);
  CHECK(reads_of(stats, 20) == 0);
}

TEST_CASE("stale serves are split by reason", "[policy_stats]") {
  PolicyStats stats("p:");
  stats.stale_serve(StaleReason::grace);
  stats.stale_serve(StaleReason::grace);
  stats.stale_serve(StaleReason::stale_if_error);
  const auto serves = stats.stale_serves();
  CHECK(serves[static_cast<std::size_t>(StaleReason::grace)] == 2);
  CHECK(serves[static_cast<std::size_t>(StaleReason::stale_if_error)] == 1);
  CHECK(to_string(StaleReason::grace) == "grace");
  CHECK(to_string(StaleReason::stale_if_error) == "stale_if_error");
}
