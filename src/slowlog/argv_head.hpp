// The arguments of a request for the slowlog: pointed at where they lie in the client's input
// buffer as it is dispatched, and copied (cut as Redis cuts them) only if the request is still
// pending when the session is about to reuse those bytes (most requests never are).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corral::slowlog {

class ArgvHead {
 public:
  // Redis's SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING: an entry shows at most 32
  // elements (31 arguments and "... (N more arguments)" when there are more), each cut at 128
  // bytes.
  static constexpr std::size_t kMaxArgs = 32;
  static constexpr std::size_t kBytesPerArg = 128;

  ArgvHead() = default;
  ArgvHead(ArgvHead&&) = default;
  ArgvHead& operator=(ArgvHead&&) = default;

  // Points at a request in RESP multibulk form (the bytes the session parsed), no copy: they
  // must stay where they are until keep() or until the last redis_argv(). A reference is one
  // pointer and a size, as it rides in every reply slot.
  void refer(std::string_view multibulk) {
    referred_ = multibulk;
    kept_ = false;
  }
  // Copies what refer() points at; once is enough. A request of up to 192 bytes is copied as it
  // came (a SET of a short key and a value of ~140 bytes); a larger one is cut first, and its cut
  // form of three arguments still fits (4 + 128 bytes for any value): a pipelined client's
  // pending writes are kept at every read, so this copy must not allocate.
  void keep();
  // Copies now, for arguments about to be overwritten (an inline request's, unescaped into a
  // scratch string the next request reuses).
  void capture(std::span<const std::string_view> argv);
  // The arguments as Redis's SLOWLOG shows them: cut, and secrets "(redacted)" as Redis does.
  std::vector<std::string> redis_argv() const;

 private:
  std::vector<std::string> shown_argv() const;  // redis_argv() before redaction
  // The kept form of a larger request: per kept argument, its full size (4 bytes) and then its
  // first bytes.
  void append_kept(std::string_view arg);
  char* kept_bytes() { return spill_ ? spill_.get() : inline_.data(); }
  const char* kept_bytes() const { return spill_ ? spill_.get() : inline_.data(); }

  std::string_view referred_;  // until keep()
  std::array<char, 192> inline_;
  std::unique_ptr<char[]> spill_;  // when the kept form is larger than inline_
  std::uint32_t kept_size_ = 0;
  std::uint32_t spill_capacity_ = 0;
  std::uint32_t argc_ = 0;  // all the request's arguments, kept or not
  bool kept_ = false;
  bool kept_multibulk_ = false;  // inline_ holds the request's bytes as they came
};

}  // namespace corral::slowlog
