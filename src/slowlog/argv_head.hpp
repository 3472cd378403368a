// The first arguments of a request for the slowlog: pointed at where they lie in the client's
// input buffer as it is dispatched, and copied into a fixed buffer only if the request is still
// pending when the session is about to reuse those bytes (most requests never are).
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

  // Points at the arguments, no copy: they must stay where they are until keep() or until the
  // last redis_argv().
  void refer(std::span<const std::string_view> argv);
  // Copies what refer() points at (a few short copies, no allocation); once is enough.
  void keep();
  // refer() and keep() at once, for arguments about to be overwritten (an inline request's).
  void capture(std::span<const std::string_view> argv) {
    refer(argv);
    keep();
  }
  // The arguments as Redis's SLOWLOG shows them: cut arguments end in "... (N more bytes)", and
  // a last element "... (N more arguments)" stands for those not kept.
  std::vector<std::string> redis_argv() const;

 private:
  std::array<char, kArgs * kBytesPerArg> bytes_;
  std::array<const char*, kArgs> where_{};    // the arguments until keep(); null after it
  std::array<std::uint32_t, kArgs> sizes_{};  // the arguments' full sizes
  std::uint32_t argc_ = 0;
};

}  // namespace corral::slowlog
