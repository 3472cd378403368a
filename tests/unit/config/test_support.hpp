// Helpers shared by the config tests: load text and get Settings or the error list.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/loader.hpp"

namespace corral::config::test {

// Raw string literals start with a newline for readability; line 1 is the line after it.
inline std::string yaml(const char* text) {
  std::string s(text);
  if (!s.empty() && s.front() == '\n') s.erase(0, 1);
  return s;
}

inline std::vector<std::string> errors_of(const std::string& text) {
  const LoadResult result = load_settings_text(text, "t.yaml");
  if (const auto* errors = std::get_if<ConfigErrors>(&result)) return errors->messages;
  return {};
}

inline Settings must_load(const std::string& text) {
  LoadResult result = load_settings_text(text, "t.yaml");
  if (const auto* errors = std::get_if<ConfigErrors>(&result)) {
    for (const std::string& m : errors->messages) UNSCOPED_INFO(m);
    FAIL("the config did not load");
  }
  return std::get<Settings>(std::move(result));
}

}  // namespace corral::config::test
