// libFuzzer target for the client request parser (untrusted bytes from any client).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "resp_invariants.hpp"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  corral::resp::fuzz::check_requests(input);
  corral::resp::fuzz::check_requests(input, corral::resp::fuzz::small_request_limits());
  // What an unauthenticated client reaches: the session parses with these until AUTH succeeds.
  corral::resp::fuzz::check_requests(input, corral::resp::kBeforeAuthLimits);
  return 0;
}
