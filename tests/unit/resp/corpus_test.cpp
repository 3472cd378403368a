// Replays every fuzz corpus file (seeds, and crashes that scripts/fuzz.sh copies in) through the
// parser and the framer with the fuzz targets' own invariants, so a fixed crash stays fixed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../../fuzz/resp_invariants.hpp"

namespace corral::resp {
namespace {

std::vector<std::filesystem::path> corpus(const char* kind) {
  const auto dir = std::filesystem::path(CORRAL_SOURCE_DIR) / "tests/fuzz/corpus" / kind;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_CASE("request corpus replays cleanly", "[corpus]") {
  const auto files = corpus("request");
  CHECK(files.size() >= 10);
  for (const auto& file : files) {
    INFO(file.filename().string());
    const std::string bytes = read_file(file);
    CHECK_NOTHROW(fuzz::check_requests(bytes));
    CHECK_NOTHROW(fuzz::check_requests(bytes, fuzz::small_request_limits()));
  }
}

TEST_CASE("reply corpus replays cleanly", "[corpus]") {
  const auto files = corpus("reply");
  CHECK(files.size() >= 10);
  for (const auto& file : files) {
    INFO(file.filename().string());
    CHECK_NOTHROW(fuzz::check_replies(read_file(file)));
  }
}

}  // namespace
}  // namespace corral::resp
