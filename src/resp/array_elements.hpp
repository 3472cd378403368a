// Splits an array reply into its elements' bytes without decoding them.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace corral::resp {

// The elements of an array reply ("*<n>\r\n" then n complete replies, nothing after them);
// nullopt when `reply` is not exactly that, or when `expected` is set and n differs from it.
std::optional<std::vector<std::string_view>> array_elements(
    std::string_view reply, std::optional<std::size_t> expected = std::nullopt);

}  // namespace corral::resp
