// ArgvHead: the deferred copy and Redis's slowlog rendering of what was kept.
#include "slowlog/argv_head.hpp"

#include <algorithm>
#include <cstring>

namespace corral::slowlog {

void ArgvHead::refer(std::span<const std::string_view> argv) {
  argc_ = static_cast<std::uint32_t>(argv.size());
  const std::size_t kept = std::min(argv.size(), kArgs);
  for (std::size_t i = 0; i < kept; ++i) {
    sizes_[i] = static_cast<std::uint32_t>(argv[i].size());
    where_[i] = argv[i].data();
  }
}

void ArgvHead::keep() {
  const std::size_t kept = std::min<std::size_t>(argc_, kArgs);
  for (std::size_t i = 0; i < kept; ++i) {
    if (where_[i] == nullptr) continue;
    std::memcpy(bytes_.data() + i * kBytesPerArg, where_[i],
                std::min<std::size_t>(sizes_[i], kBytesPerArg));
    where_[i] = nullptr;
  }
}

std::vector<std::string> ArgvHead::redis_argv() const {
  std::vector<std::string> out;
  const std::size_t kept = std::min<std::size_t>(argc_, kArgs);
  for (std::size_t i = 0; i < kept; ++i) {
    const std::size_t size = sizes_[i];
    const char* from = where_[i] != nullptr ? where_[i] : bytes_.data() + i * kBytesPerArg;
    std::string arg(from, std::min(size, kBytesPerArg));
    if (size > kBytesPerArg) {
      arg += "... (" + std::to_string(size - kBytesPerArg) + " more bytes)";
    }
    out.push_back(std::move(arg));
  }
  if (argc_ > kArgs) out.push_back("... (" + std::to_string(argc_ - kArgs) + " more arguments)");
  return out;
}

}  // namespace corral::slowlog
