// Command names and keywords compare as Redis does: ASCII case-insensitive (resp/ascii.hpp).
#pragma once

#include "resp/ascii.hpp"

namespace corral::proxy {
using resp::iequals;
}  // namespace corral::proxy
