// Glob matching with Redis's rules, backtracking to the last '*' only (linear in practice, no
// recursion: a hostile pattern cannot exhaust the stack).
#include "proxy/commands/glob.hpp"

#include <cstddef>
#include <utility>

namespace corral::proxy {

namespace {
char fold(char c, bool nocase) {
  return nocase && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Matches `c` against the class starting after '[' at pattern[p]; sets p past its ']' (or to the
// end of an unclosed class, which Redis treats as closed there).
bool class_match(std::string_view pattern, std::size_t& p, char c, bool nocase) {
  const bool negate = p < pattern.size() && pattern[p] == '^';
  if (negate) ++p;
  bool found = false;
  while (p < pattern.size() && pattern[p] != ']') {
    if (pattern[p] == '\\' && p + 1 < pattern.size()) {
      ++p;
      found |= fold(pattern[p], nocase) == fold(c, nocase);
    } else if (p + 2 < pattern.size() && pattern[p + 1] == '-') {
      char low = fold(pattern[p], nocase);
      char high = fold(pattern[p + 2], nocase);
      if (low > high) std::swap(low, high);
      const char folded = fold(c, nocase);
      found |= folded >= low && folded <= high;
      p += 2;
    } else {
      found |= fold(pattern[p], nocase) == fold(c, nocase);
    }
    ++p;
  }
  if (p < pattern.size()) ++p;  // the ']'
  return found != negate;
}
}  // namespace

bool glob_match(std::string_view pattern, std::string_view text, bool nocase) {
  std::size_t p = 0, t = 0;
  std::size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = ++p;
      star_text = t;
      continue;
    }
    if (p < pattern.size()) {
      std::size_t next = p + 1;
      bool ok = false;
      if (pattern[p] == '?') {
        ok = true;
      } else if (pattern[p] == '[') {
        ok = class_match(pattern, next, text[t], nocase);
      } else if (pattern[p] == '\\' && p + 1 < pattern.size()) {
        ok = fold(pattern[p + 1], nocase) == fold(text[t], nocase);
        next = p + 2;
      } else {
        ok = fold(pattern[p], nocase) == fold(text[t], nocase);
      }
      if (ok) {
        p = next;
        ++t;
        continue;
      }
    }
    if (star == std::string_view::npos) return false;
    p = star;
    t = ++star_text;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace corral::proxy
