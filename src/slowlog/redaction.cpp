// The redaction rules, one per command that Redis 7.0 redacts, matched without regard to case.
#include "slowlog/redaction.hpp"

#include <algorithm>
#include <array>

namespace corral::slowlog {

namespace {
bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

// The configs Redis flags SENSITIVE_CONFIG.
constexpr std::array<std::string_view, 3> kSensitiveConfigs = {"masteruser", "masterauth",
                                                               "requirepass"};
}  // namespace

std::vector<bool> redacted_arguments(std::span<const std::string_view> argv) {
  std::vector<bool> hide(argv.size(), false);
  if (argv.empty()) return hide;
  const auto from = [&](std::size_t first) {
    for (std::size_t i = first; i < argv.size(); ++i) hide[i] = true;
  };
  if (same(argv[0], "auth")) {
    from(1);
  } else if (same(argv[0], "hello")) {
    for (std::size_t i = 2; i < argv.size(); ++i) {
      if (same(argv[i], "auth") && i + 2 < argv.size()) {
        hide[i + 1] = hide[i + 2] = true;
        i += 2;
      } else if (same(argv[i], "setname") && i + 1 < argv.size()) {
        ++i;  // a client named "auth" is no AUTH option, as in Redis's helloCommand
      }
    }
  } else if (same(argv[0], "migrate")) {
    for (std::size_t i = 6; i < argv.size(); ++i) {
      if (same(argv[i], "auth") && i + 1 < argv.size()) {
        hide[++i] = true;
      } else if (same(argv[i], "auth2") && i + 2 < argv.size()) {
        hide[i + 1] = hide[i + 2] = true;
        i += 2;
      } else if (same(argv[i], "keys")) {
        break;
      }
    }
  } else if (argv.size() >= 3 && same(argv[0], "acl") && same(argv[1], "setuser")) {
    from(2);
  } else if (argv.size() >= 4 && same(argv[0], "config") && same(argv[1], "set")) {
    for (std::size_t i = 2; i + 1 < argv.size(); i += 2) {
      const bool sensitive =
          std::any_of(kSensitiveConfigs.begin(), kSensitiveConfigs.end(),
                      [&](std::string_view name) { return same(argv[i], name); });
      if (sensitive) hide[i + 1] = true;
    }
  }
  return hide;
}

}  // namespace corral::slowlog
