// ArgvHead: the deferred copy and Redis's slowlog rendering (slowlogCreateEntry) of what was kept.
#include "slowlog/argv_head.hpp"

#include <algorithm>
#include <cstring>

#include "slowlog/redaction.hpp"

namespace corral::slowlog {

namespace {
// What is shown of `argc` arguments: all of them up to kMaxArgs, else kMaxArgs - 1 and a note.
std::size_t shown_args(std::size_t argc) {
  return argc > ArgvHead::kMaxArgs ? ArgvHead::kMaxArgs - 1 : argc;
}

// The integer of a RESP header ("*3\r\n", "$5\r\n") at `at`, which moves past its CRLF; -1 if
// the bytes are not one (the session parsed them already, so only a bug gets there).
long long read_header(std::string_view raw, std::size_t& at, char type) {
  if (at >= raw.size() || raw[at] != type) return -1;
  long long value = 0;
  std::size_t i = at + 1;
  for (; i < raw.size() && raw[i] >= '0' && raw[i] <= '9'; ++i) value = value * 10 + (raw[i] - '0');
  if (i + 1 >= raw.size() || raw[i] != '\r' || raw[i + 1] != '\n') return -1;
  at = i + 2;
  return value;
}

// Calls `visit` with each argument of a RESP multibulk that an entry shows; returns argc.
template <class Visit>
std::size_t walk_multibulk(std::string_view raw, Visit&& visit) {
  std::size_t at = 0;
  const long long argc = read_header(raw, at, '*');
  if (argc < 0) return 0;
  const std::size_t count = shown_args(static_cast<std::size_t>(argc));
  for (std::size_t i = 0; i < count; ++i) {
    const long long size = read_header(raw, at, '$');
    if (size < 0 || at + static_cast<std::size_t>(size) > raw.size()) break;
    visit(raw.substr(at, static_cast<std::size_t>(size)));
    at += static_cast<std::size_t>(size) + 2;
  }
  return static_cast<std::size_t>(argc);
}

std::string rendered(std::string_view first_bytes, std::size_t full_size) {
  std::string arg(first_bytes);
  if (full_size > ArgvHead::kBytesPerArg) {
    arg += "... (" + std::to_string(full_size - ArgvHead::kBytesPerArg) + " more bytes)";
  }
  return arg;
}

void append_more_arguments(std::vector<std::string>& out, std::size_t argc) {
  if (argc > ArgvHead::kMaxArgs) {
    out.push_back("... (" + std::to_string(argc - shown_args(argc)) + " more arguments)");
  }
}
}  // namespace

void ArgvHead::append_kept(std::string_view arg) {
  const auto full = static_cast<std::uint32_t>(arg.size());
  const std::size_t cut = std::min<std::size_t>(arg.size(), kBytesPerArg);
  const std::size_t needed = kept_size_ + sizeof full + cut;
  const std::size_t capacity = spill_ ? spill_capacity_ : inline_.size();
  if (needed > capacity) {
    // Doubling, up to what kMaxArgs cut arguments take: a request a little over the inline room
    // (a key and a 100-byte value) costs a small allocation, not the largest.
    const std::size_t largest = kMaxArgs * (sizeof full + kBytesPerArg);
    const std::size_t grown = std::min(largest, std::max(needed, 2 * capacity));
    auto larger = std::make_unique_for_overwrite<char[]>(grown);
    std::memcpy(larger.get(), kept_bytes(), kept_size_);
    spill_ = std::move(larger);
    spill_capacity_ = static_cast<std::uint32_t>(grown);
  }
  std::memcpy(kept_bytes() + kept_size_, &full, sizeof full);
  std::memcpy(kept_bytes() + kept_size_ + sizeof full, arg.data(), cut);
  kept_size_ = static_cast<std::uint32_t>(needed);
}

void ArgvHead::keep() {
  if (kept_) return;
  kept_ = true;
  // Most requests are short: their bytes as they came, one copy, cut only if ever shown.
  if (referred_.size() <= inline_.size()) {
    // std::copy, not memcpy: a slot that referred to nothing (a protocol error's) has a null
    // data(), which memcpy may not be given even for 0 bytes.
    std::copy(referred_.begin(), referred_.end(), inline_.begin());
    kept_size_ = static_cast<std::uint32_t>(referred_.size());
    kept_multibulk_ = true;
    referred_ = {};
    return;
  }
  kept_size_ = 0;
  argc_ = static_cast<std::uint32_t>(
      walk_multibulk(referred_, [this](std::string_view arg) { append_kept(arg); }));
  referred_ = {};
}

void ArgvHead::capture(std::span<const std::string_view> argv) {
  referred_ = {};
  kept_multibulk_ = false;
  kept_size_ = 0;
  argc_ = static_cast<std::uint32_t>(argv.size());
  for (std::size_t i = 0; i < shown_args(argv.size()); ++i) append_kept(argv[i]);
  kept_ = true;
}

std::vector<std::string> ArgvHead::shown_argv() const {
  std::vector<std::string> out;
  if (!kept_ || kept_multibulk_) {
    const std::string_view multibulk =
        kept_ ? std::string_view(inline_.data(), kept_size_) : referred_;
    const std::size_t argc = walk_multibulk(multibulk, [&](std::string_view arg) {
      out.push_back(rendered(arg.substr(0, std::min(arg.size(), kBytesPerArg)), arg.size()));
    });
    append_more_arguments(out, argc);
    return out;
  }
  std::uint32_t at = 0;
  while (at < kept_size_) {
    std::uint32_t full = 0;
    std::memcpy(&full, kept_bytes() + at, sizeof full);
    at += sizeof full;
    const std::size_t cut = std::min<std::size_t>(full, kBytesPerArg);
    out.push_back(rendered({kept_bytes() + at, cut}, full));
    at += static_cast<std::uint32_t>(cut);
  }
  append_more_arguments(out, argc_);
  return out;
}

std::vector<std::string> ArgvHead::redis_argv() const {
  auto out = shown_argv();
  const std::vector<std::string_view> views(out.begin(), out.end());
  const auto hide = redacted_arguments(views);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (hide[i]) out[i] = kRedacted;
  }
  return out;
}

}  // namespace corral::slowlog
