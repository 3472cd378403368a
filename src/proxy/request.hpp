// The dispatcher's name for a framed request (resp/request.hpp).
#pragma once

#include "resp/request.hpp"

namespace corral::proxy {
using Request = resp::Request;
}  // namespace corral::proxy
