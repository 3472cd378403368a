// The first arguments of a request, copied into a fixed buffer as it is dispatched, because a
// request is known to be slow only once its reply is in and its bytes are long gone by then.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corral::slowlog {

class ArgvHead {
 public:
  // Small, as it rides in every reply slot: the command and its first two arguments (most often
  // the key and a value), each cut at 32 bytes.
  static constexpr std::size_t kArgs = 3;
  static constexpr std::size_t kBytesPerArg = 32;

  // A few short copies: cheap enough for every request, with no allocation.
  void capture(std::span<const std::string_view> argv);
  // The arguments as Redis's SLOWLOG shows them: cut arguments end in "... (N more bytes)", and
  // a last element "... (N more arguments)" stands for those not kept.
  std::vector<std::string> redis_argv() const;

 private:
  std::array<char, kArgs * kBytesPerArg> bytes_;
  std::array<std::uint32_t, kArgs> sizes_{};  // the arguments' full sizes
  std::uint32_t argc_ = 0;
};

}  // namespace corral::slowlog
