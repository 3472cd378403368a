// libFuzzer target for the upstream reply framer and decoder.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "resp_invariants.hpp"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  corral::resp::fuzz::check_replies(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
