// ASCII case-insensitive comparison, as Redis matches command names, keywords and HTTP header
// names. The one copy of it in the tree: locale-free and allocation-free.
#pragma once

#include <algorithm>
#include <string_view>

namespace corral::resp {

constexpr char to_lower_ascii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

constexpr bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return to_lower_ascii(x) == to_lower_ascii(y);
         });
}

constexpr bool istarts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && iequals(text.substr(0, prefix.size()), prefix);
}

}  // namespace corral::resp
