// The KeyedCaller of one Redis (see keyed_caller.hpp).
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "upstream/keyed_caller.hpp"
#include "upstream/link.hpp"

namespace corral::upstream {

// On `links`' shared connection of `database`; `links` must outlive the caller.
std::shared_ptr<KeyedCaller> make_single_caller(const boost::asio::any_io_executor& executor,
                                                Links& links, int database);

}  // namespace corral::upstream
