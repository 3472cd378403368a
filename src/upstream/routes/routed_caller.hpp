// The KeyedCaller over routed upstreams: each conversation about a key goes to the upstream the
// key is routed to; the primaries of every upstream are named with its qualifier.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "upstream/keyed_caller.hpp"
#include "upstream/routes/route_table.hpp"

namespace corral::upstream {

// `callers[i]` talks to the router's upstream i, named `qualifiers[i]` ("" for the default).

std::shared_ptr<KeyedCaller> make_routed_caller(std::shared_ptr<const RouteTable> routes,
                                                std::vector<std::shared_ptr<KeyedCaller>> callers,
                                                std::vector<std::string> qualifiers);

// "name/server" -> (name's index, server); a name that is not one of `qualifiers` -> the default
// upstream and the whole text. Shared by the router and its caller.
std::pair<std::size_t, std::string_view> split_qualified(const std::vector<std::string>& qualifiers,
                                                         std::string_view server);

}  // namespace corral::upstream
