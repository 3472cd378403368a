// ASCII case-insensitive comparison, as Redis matches command names and keywords.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace corral::proxy {

inline bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace corral::proxy
